"""A third-party SOAP client (zeep) loads the gateway's WSDL and calls every operation with no
hand-written XML (the Wallet operations in test_wallet.py)."""
import zeep
import pytest


def entries(mapping):
    return {"entry": [{"key": k, "value": v} for k, v in mapping.items()]}


def as_dict(delivery_status):
    return {e.key: e.value for e in delivery_status.entry}


def notification(nid, recipients, **extra):
    return {
        "id": nid,
        "recipients": recipients,
        "timeout": 600,
        "pushContent": {
            "badge": 2,
            "sound": "default",
            "text": "Ваш код подтверждения: 4242",
            "type": "PIN_CODE",
            "details": entries({"target": "4242"}),
        },
        "details": entries({"name": "Платёж", "fxAmount": "150000", "currency": "RUB", "Срок": "3 года"}),
        **extra,
    }


def test_wsdl_describes_every_operation(client):
    operations = set(client.service._binding._operations.keys())
    assert operations == {
        "sendNotification", "getNotificationDetails", "getDeliveryStatus",
        "deleteSubscription", "checkSubscriptionExists", "updatePass", "getPassStatus",
        "startActivity", "updateActivity", "endActivity", "getActivityStatus", "refreshWidgets",
        "createActivityChannel", "deleteActivityChannel", "broadcastActivityUpdate", "refreshControls",
    }


def test_send_get_details_and_status(client, unique, subscribe):
    alice, bob = unique("alice"), unique("bob")
    subscribe(alice)
    nid = unique("zeep")

    result = client.service.sendNotification(notification=notification(nid, [alice, bob], priority=10, perishable=False))
    assert result.status == "OK"
    assert result.errorMessage is None
    assert as_dict(result.deliveryStatus) == {alice: "QUEUED", bob: "INVALID_SUBSCRIPTION"}
    # The delivery engine runs against the simulator, so later reads may already say SENT.

    details = client.service.getNotificationDetails(id=nid)
    assert details.status == "OK"
    sent = details.notification
    assert sent.id == nid
    assert sent.recipients == [alice, bob]
    assert sent.timeout == 600
    assert sent.priority == 10
    assert sent.perishable is False
    assert sent.pushContent.text == "Ваш код подтверждения: 4242"
    assert sent.pushContent.type == "PIN_CODE"
    assert sent.pushContent.badge == 2
    assert [(e.key, e.value) for e in sent.pushContent.details.entry] == [("target", "4242")]
    assert [(e.key, e.value) for e in sent.details.entry] == [
        ("name", "Платёж"), ("fxAmount", "150000"), ("currency", "RUB"), ("Срок", "3 года")]

    status = client.service.getDeliveryStatus(id=nid)
    assert status.status == "OK"
    states = as_dict(status.deliveryStatus)
    assert states[alice] in ("QUEUED", "SENT")
    assert states[bob] == "INVALID_SUBSCRIPTION"


def test_repeated_id_is_duplicated_entity_with_first_statuses(client, unique, subscribe):
    carol = unique("carol")
    subscribe(carol, platform="ANDROID")
    nid = unique("dup")
    first = client.service.sendNotification(notification=notification(nid, [carol]))
    assert first.status == "OK"
    again = client.service.sendNotification(notification=notification(nid, [unique("someone-else")]))
    assert again.status == "DUPLICATED_ENTITY"
    assert again.errorMessage
    assert as_dict(again.deliveryStatus)[carol] in ("QUEUED", "SENT")


def test_unknown_ids_are_entity_not_found(client, unique):
    missing = unique("missing")
    details = client.service.getNotificationDetails(id=missing)
    assert details.status == "ENTITY_NOT_FOUND"
    assert missing in details.errorMessage
    assert details.notification is None
    status = client.service.getDeliveryStatus(id=missing)
    assert status.status == "ENTITY_NOT_FOUND"


def test_check_and_delete_subscriptions(client, unique, subscribe):
    dave, erin = unique("dave"), unique("erin")
    subscribe(dave)
    subscribe(dave, platform="ANDROID")
    exists = client.service.checkSubscriptionExists(user=[erin, dave])
    assert exists.status == "OK"
    assert exists.exists == [False, True]

    deleted = client.service.deleteSubscription(user=dave)
    assert deleted.status == "OK"
    assert client.service.checkSubscriptionExists(user=[dave]).exists == [False]
    again = client.service.deleteSubscription(user=dave)
    assert again.status == "ENTITY_NOT_FOUND"


def test_bad_value_is_a_fault_naming_the_field(client, unique):
    message = notification(unique("bad"), ["u"])
    message["timeout"] = 0
    with pytest.raises(zeep.exceptions.Fault) as fault:
        client.service.sendNotification(notification=message)
    assert "notification/timeout" in fault.value.message


def test_push_arrives_at_the_simulator(client, unique, subscribe):
    """sendNotification → PostgreSQL → delivery engine → APNs over HTTP/2 + TLS → simulator."""
    import json, os, subprocess, time
    dave = unique("dave")
    subscribe(dave)  # an iOS device whose token is abcdef0123456789
    nid = unique("arrives")
    assert client.service.sendNotification(notification=notification(nid, [dave])).status == "OK"
    deadline = time.time() + 30
    while time.time() < deadline:
        if as_dict(client.service.getDeliveryStatus(id=nid).deliveryStatus)[dave] == "SENT":
            break
        time.sleep(0.2)
    assert as_dict(client.service.getDeliveryStatus(id=nid).deliveryStatus)[dave] == "SENT"
    pushes = subprocess.run(
        ["curl", "-sS", "--http2", "--cacert", os.environ["PIGEON_SIMULATOR_CA"], os.environ["PIGEON_SIMULATOR_URL"] + "/simulator/pushes"],
        check=True, capture_output=True, text=True).stdout
    mine = [json.loads(line) for line in pushes.splitlines() if nid in line]
    assert len(mine) == 1
    assert mine[0]["payload"]["aps"]["alert"] == "Ваш код подтверждения: 4242"
    assert mine[0]["payload"]["type"] == "PIN_CODE"


def test_interruption_level_round_trips(client, unique, subscribe):
    nid = unique("fraud")
    subscribe(unique("frank"))
    assert client.service.sendNotification(notification=notification(nid, ["nobody"], interruptionLevel="time-sensitive")).status == "OK"
    assert client.service.getNotificationDetails(id=nid).notification.interruptionLevel == "time-sensitive"
    with pytest.raises(zeep.exceptions.Fault) as fault:
        # zeep checks enumerations only when asked to; the gateway refuses the value itself.
        client.service.sendNotification(notification=notification(unique("bad-level"), ["u"], interruptionLevel="urgent"))
    assert "interruptionLevel" in fault.value.message


def test_live_activity_operations(client, unique, subscribe):
    """CONTRACT §9 through a stock client: start, status, update, end, and the faults."""
    alice, nobody = unique("alice"), unique("nobody")
    subscribe(alice, platform="ANDROID")  # an Android device: the activity reaches it by data message
    aid = unique("transfer")
    started = client.service.startActivity(activityId=aid, activityType="TransferAttributes", recipients=[alice, nobody],
                                           attributes='{"transferId": "T-1"}', contentState='{"step": "accepted"}',
                                           alertTitle="Transfer", staleAfterSeconds=600)
    assert started.status == "OK"
    states = {e.key: e.value for e in started.activityStatus.entry}
    assert states == {alice: "STARTING", nobody: "NO_TOKEN"}
    assert client.service.updateActivity(activityId=aid, contentState='{"step": "sent"}', priority=10).status == "OK"
    status = client.service.getActivityStatus(activityId=aid)
    assert status.status == "OK" and {e.key for e in status.activityStatus.entry} == {alice, nobody}
    assert client.service.endActivity(activityId=aid, dismissAfterSeconds=60).status == "OK"
    assert client.service.updateActivity(activityId=aid, contentState="{}").status == "ENTITY_NOT_FOUND"
    assert client.service.startActivity(activityId=aid, activityType="T", recipients=[alice], attributes="{}", contentState="{}").status == "DUPLICATED_ENTITY"
    assert client.service.getActivityStatus(activityId=unique("unknown")).status == "ENTITY_NOT_FOUND"
    with pytest.raises(zeep.exceptions.Fault) as fault:
        client.service.startActivity(activityId=unique("bad"), activityType="T", recipients=[alice], attributes="[1]", contentState="{}")
    assert "attributes" in fault.value.message
    with pytest.raises(zeep.exceptions.Fault) as fault:
        client.service.updateActivity(activityId=unique("never"), contentState="{}")
    assert "activityId" in fault.value.message


def test_widgets_and_channels(client, unique, subscribe):
    bob = unique("bob")
    subscribe(bob)
    assert client.service.refreshWidgets(recipients=[bob]).status == "OK"
    assert client.service.refreshWidgets(recipients=[unique("nobody")]).status == "ENTITY_NOT_FOUND"
    # subscribe() registers an iPhone: controls (iOS 18) go to it.
    assert client.service.refreshControls(recipients=[bob]).status == "OK"
    assert client.service.refreshControls(recipients=[unique("nobody")]).status == "ENTITY_NOT_FOUND"
    created = client.service.createActivityChannel(activityType="MatchAttributes", storagePolicy=1)
    assert created.status == "OK" and created.channelId
    assert client.service.broadcastActivityUpdate(channelId=created.channelId, contentState='{"score": "1:0"}', alertTitle="Goal").status == "OK"
    assert client.service.deleteActivityChannel(channelId=created.channelId).status == "OK"
    gone = client.service.broadcastActivityUpdate(channelId=created.channelId, contentState="{}")
    assert gone.status == "ENTITY_NOT_FOUND" and created.channelId in gone.errorMessage
