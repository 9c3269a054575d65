"""The flow of TVIP's own example, examples/simple_example.py of
tmsproviderapisdk, run against a tvsm node with the SDK unchanged.

The example's steps, in its order: configure; hash a password; create a
disabled account; enable it with update(); list all accounts; get one
account by id and delete it; get an account and create a subscription for
it with tariff 1, starting now in Moscow time formatted with %z; and its
paging helper. The example gets and deletes account 1 and then gets
account 1 again, which no server whose delete deletes can answer; here the
account deleted is the one the flow created, and the subscription goes to
another one. Any step that fails raises, so the script exits non-zero.

Environment: TVSM_URL, the node's base URL. The node has a provider whose
admin is provider_admin / provider_password (the example's credentials)
and a tariff with id 1.
"""
import os
import sys
from datetime import datetime

import pytz
from tmsproviderapisdk import TmsConfig, TmsConfigHolder
from tmsproviderapisdk import TmsAccount
from tmsproviderapisdk.tms_exceptions import ApiHTTPError
from tmsproviderapisdk import TmsAccountSubscription


def check(ok, what):
    if not ok:
        print("FAILED:", what)
        sys.exit(1)


config = TmsConfig(os.environ["TVSM_URL"], 'provider_admin', 'provider_password')
TmsConfigHolder.apply(config)

pin_md5 = TmsAccount.get_md5_pin("test_password")
new_account = TmsAccount(login="test_account", fullname="Marshall Mathers", pin_md5=pin_md5, enabled=False)
account = new_account.create()
print(account)
check(account is not None and account.id and account.enabled is False, "create a disabled account")
created_id = account.id

account.enabled = True
updated = account.update()
check(updated is not None and updated.enabled is True and updated.id == created_id, "enable it with update()")

# A second account, for the subscription step.
keep = TmsAccount(login="subscriber", fullname="Second Subscriber", pin_md5=pin_md5).create()
check(keep is not None and keep.id, "create a second account")

accounts, total_accounts_count = TmsAccount.get_list()
for a in accounts:
    print(a)
check(total_accounts_count == 2 and len(accounts) == 2, "list all accounts")

try:
    account = TmsAccount.get(created_id)
except ApiHTTPError as e:
    print(e)
    check(False, "get an account by id")
else:
    check(account.login == "test_account", "get an account by id")
    check(account.delete() == 200, "delete it")

try:
    TmsAccount.get(created_id)
    check(False, "a deleted account is gone")
except ApiHTTPError as e:
    print(e)
    check(e.status_code == 404, "a deleted account answers 404")

account = TmsAccount.get(keep.id)
now = datetime.now(pytz.timezone('Europe/Moscow'))
now_with_format = now.strftime("%Y-%m-%dT%H:%M:%S%z")
subscription = TmsAccountSubscription(account=account.id, start=now_with_format, tarif=1)
try:
    subscription = subscription.create()
except ApiHTTPError as e:
    print(e)
    check(False, "create a subscription")
else:
    print(subscription)
    check(subscription.account == account.id and subscription.tarif == 1 and subscription.stop is None, "create a subscription")


def get_accounts_with_paging():
    accounts, total = TmsAccount.get_list()
    if total > len(accounts):
        while True:
            if total == len(accounts):
                break
            page_accounts, _ = TmsAccount.get_list(start=len(accounts), limit=50, sort="id")
            accounts.extend(page_accounts)
    return accounts


check([a.id for a in get_accounts_with_paging()] == [keep.id], "the example's paging helper")
print("flow: ok")
