"""One create/get/list/update/delete per model class of TVIP's Provider
API SDK (what the class offers: the read-only ones get and list), against
a tvsm node, with the SDK unchanged. Each call goes through the SDK's own
methods, so every key its _dict_to_object reads must be in the answer.

Environment: TVSM_URL; ADMIN_LOGIN / ADMIN_PASSWORD, a superadmin (device
types are written by superadmins); the provider admin provider_admin /
provider_password of provider PROVIDER_ID; REGION_ID, CATEGORY_ID and
CHANNEL_ID, a region, a channel category and a channel made through the
Admin API; TARIFF_ID, a tariff of the provider holding CHANNEL_ID.
"""
import os
import sys
from datetime import datetime, timedelta, timezone

from tmsproviderapisdk import (TmsConfig, TmsConfigHolder, TmsAccount, TmsAccountSubscription, TmsChannel, TmsDevice,
                               TmsDeviceSubscription, TmsTarif, TmsTarifTag, TmsRegion, TmsAccountNetwork, TmsDeviceTypes,
                               TmsFavoriteGroup)
from tmsproviderapisdk.tms_provider import TmsProvider
from tmsproviderapisdk.tms_exceptions import ApiHTTPError

URL = os.environ["TVSM_URL"]
PROVIDER = int(os.environ["PROVIDER_ID"])
REGION = int(os.environ["REGION_ID"])
CATEGORY = int(os.environ["CATEGORY_ID"])
CHANNEL = int(os.environ["CHANNEL_ID"])
TARIFF = int(os.environ["TARIFF_ID"])
provider_admin = TmsConfig(URL, "provider_admin", "provider_password")
superadmin = TmsConfig(URL, os.environ["ADMIN_LOGIN"], os.environ["ADMIN_PASSWORD"])


def check(ok, what):
    if not ok:
        print("FAILED:", what)
        sys.exit(1)


def gone(cls, id):
    try:
        cls.get(id)
    except ApiHTTPError as e:
        return e.status_code == 404
    return False


def ids(result):
    if result is None:  # the SDK answers None for an empty list
        return []
    objects, total = result
    check(total == len(objects), "total %d for %d objects" % (total, len(objects)))
    return [o.id for o in objects]


def now(delta=0):
    return (datetime.now(timezone.utc) + timedelta(days=delta)).strftime("%Y-%m-%dT%H:%M:%S%z")


TmsConfigHolder.apply(provider_admin)

# TmsAccount
a = TmsAccount(login="model-account", fullname="Model Account", pin_md5=TmsAccount.get_md5_pin("pw"), region_tag=REGION,
               remote_custom_field="crm-1").create()
check(a.provider == PROVIDER and a.region_tag == REGION and isinstance(a.created, int), "TmsAccount.create")
check(TmsAccount.get(a.id).login == "model-account", "TmsAccount.get")
check(ids(TmsAccount.get_list(region_tag=REGION, enabled=True, remote_custom_field="crm-1")) == [a.id], "TmsAccount.get_list")
a.fullname = "Renamed"
check(a.update().fullname == "Renamed", "TmsAccount.update")
doomed = TmsAccount(login="doomed", fullname="Doomed", pin_md5=TmsAccount.get_md5_pin("pw")).create()
check(doomed.delete() == 200 and gone(TmsAccount, doomed.id), "TmsAccount.delete")

# TmsAccountSubscription
s = TmsAccountSubscription(account=a.id, start=now(), tarif=TARIFF, time_shift_depth=24).create()
check(s.account == a.id and s.time_shift_depth == 24, "TmsAccountSubscription.create")
check(TmsAccountSubscription.get(s.id).tarif == TARIFF, "TmsAccountSubscription.get")
check(ids(TmsAccountSubscription.get_list(account=a.id, tarif=TARIFF)) == [s.id], "TmsAccountSubscription.get_list")
s.stop = now(30)
check(s.update().stop is not None, "TmsAccountSubscription.update")
check(s.delete() == 200 and gone(TmsAccountSubscription, s.id), "TmsAccountSubscription.delete")

# TmsDevice
d = TmsDevice(unique_id="00:1A:79:12:34:56", account=a.id, mac="00:1a:79:12:34:56", comment="hall").create()
check(d.account == a.id and d.provider == PROVIDER and d.mac == "00:1a:79:12:34:56", "TmsDevice.create")
check(TmsDevice.get(d.id).comment == "hall", "TmsDevice.get")
check(ids(TmsDevice.get_list(account=a.id, quick_search="00:1a:79:12")) == [d.id], "TmsDevice.get_list")
d.use_nat = True
d.udpxy_addr = "10.0.0.1:4022"
u = d.update()
check(u.use_nat is True and u.udpxy_addr == "10.0.0.1:4022", "TmsDevice.update")

# TmsDeviceSubscription
ds = TmsDeviceSubscription(device=d.id, start=now(), tarif=TARIFF).create()
check(ds.device == d.id and ds.tarif == TARIFF, "TmsDeviceSubscription.create")
check(TmsDeviceSubscription.get(ds.id).device == d.id, "TmsDeviceSubscription.get")
check(ids(TmsDeviceSubscription.get_list(device=d.id)) == [ds.id], "TmsDeviceSubscription.get_list")
ds.time_shift_depth = 48
check(ds.update().time_shift_depth == 48, "TmsDeviceSubscription.update")
check(ds.delete() == 200 and gone(TmsDeviceSubscription, ds.id), "TmsDeviceSubscription.delete")
check(d.delete() == 200 and gone(TmsDevice, d.id), "TmsDevice.delete")

# TmsAccountNetwork
n = TmsAccountNetwork(network="192.0.2.0/24", account=a.id, description="office").create()
check(n.network == "192.0.2.0/24" and n.account == a.id, "TmsAccountNetwork.create")
check(TmsAccountNetwork.get(n.id).description == "office", "TmsAccountNetwork.get")
check(ids(TmsAccountNetwork.get_list(account=a.id)) == [n.id], "TmsAccountNetwork.get_list")
n.network = "192.0.2.0/25"
check(n.update().network == "192.0.2.0/25", "TmsAccountNetwork.update")
check(n.delete() == 200 and gone(TmsAccountNetwork, n.id), "TmsAccountNetwork.delete")

# TmsTarifTag
tag = TmsTarifTag(enabled=True, name="Premium", provider=PROVIDER, position=2).create()
check(tag.name == "Premium" and tag.provider == PROVIDER and tag.position == 2, "TmsTarifTag.create")
check(TmsTarifTag.get(tag.id).name == "Premium", "TmsTarifTag.get")
check(tag.id in ids(TmsTarifTag.get_list(provider=PROVIDER, enabled=True)), "TmsTarifTag.get_list")
tag.name = "Premium+"
check(tag.update().name == "Premium+", "TmsTarifTag.update")

# TmsTarif
t = TmsTarif(tarif_name="Model Tariff", tarif_tag=tag.id, enabled=True).create()
check(t.tarif_name == "Model Tariff" and t.provider == PROVIDER and t.tarif_tag == tag.id, "TmsTarif.create")
check(TmsTarif.get(t.id).tarif_name == "Model Tariff", "TmsTarif.get")
check(ids(TmsTarif.get_list(tarif_tag=tag.id)) == [t.id], "TmsTarif.get_list")
check(TARIFF in ids(TmsTarif.get_list(channel=CHANNEL)), "TmsTarif.get_list by channel")
t.enabled = False
check(t.update().enabled is False, "TmsTarif.update")
check(t.delete() == 200 and gone(TmsTarif, t.id), "TmsTarif.delete")
spare = TmsTarifTag(enabled=False, name="Spare", provider=PROVIDER).create()
check(spare.delete() == 200 and gone(TmsTarifTag, spare.id), "TmsTarifTag.delete")

# Read-only classes: TmsProvider, TmsChannel, TmsRegion, TmsFavoriteGroup
p = TmsProvider.get(PROVIDER)
check(p.id == PROVIDER and p.region_tag == REGION, "TmsProvider.get")
check(ids(TmsProvider.get_list()) == [PROVIDER], "TmsProvider.get_list: the admin's provider only")
c = TmsChannel.get(CHANNEL)
check(c.id == CHANNEL and c.favorites == [CATEGORY] and isinstance(c.display_number, str), "TmsChannel.get")
check(CHANNEL in ids(TmsChannel.get_list(tarif=TARIFF)), "TmsChannel.get_list")
r = TmsRegion.get(REGION)
check(r.id == REGION and r.name, "TmsRegion.get")
check(REGION in ids(TmsRegion.get_list()), "TmsRegion.get_list")
f = TmsFavoriteGroup.get(CATEGORY)
check(f.id == CATEGORY and f.name, "TmsFavoriteGroup.get")
check(CATEGORY in ids(TmsFavoriteGroup.get_list()), "TmsFavoriteGroup.get_list")

# TmsDeviceTypes: a catalog every provider shares, written by superadmins.
TmsConfigHolder.apply(superadmin)
dt = TmsDeviceTypes(device_type="tvip-s605").create()
check(dt.device_type == "tvip-s605", "TmsDeviceTypes.create")
check(TmsDeviceTypes.get(dt.id).device_type == "tvip-s605", "TmsDeviceTypes.get")
check(dt.id in ids(TmsDeviceTypes.get_list()), "TmsDeviceTypes.get_list")
dt.device_type = "tvip-s805"
check(dt.update().device_type == "tvip-s805", "TmsDeviceTypes.update")
check(dt.delete() == 200 and gone(TmsDeviceTypes, dt.id), "TmsDeviceTypes.delete")

check(a.delete() == 200, "clean up")
print("models: ok")
