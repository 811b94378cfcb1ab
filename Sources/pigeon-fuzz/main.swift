// A libFuzzer driver for every parser of outside bytes in Swift (see FuzzTargets). Built by
// fuzz/run.sh only: with -DPIGEON_FUZZ, coverage instrumentation and AddressSanitizer, linked with
// libFuzzer's runtime without its main. In every other build it only says how to build it.
#if PIGEON_FUZZ
FuzzDriver.run()
#else
print("pigeon-fuzz: build and run it with fuzz/run.sh")
#endif
