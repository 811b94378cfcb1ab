print("pigeon")
