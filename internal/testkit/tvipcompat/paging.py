"""Paging over 120 accounts with TVIP's SDK, as a provider's sync job does:
the example's get_accounts_with_paging (first page of the default 50,
then pages of 50 sorted by id), and pages of other sizes and orders. Every
account must come exactly once.

Environment: TVSM_URL; the provider admin provider_admin /
provider_password has no accounts yet.
"""
import os
import sys

from tmsproviderapisdk import TmsConfig, TmsConfigHolder, TmsAccount


def check(ok, what):
    if not ok:
        print("FAILED:", what)
        sys.exit(1)


TmsConfigHolder.apply(TmsConfig(os.environ["TVSM_URL"], "provider_admin", "provider_password"))
pin = TmsAccount.get_md5_pin("secret")
created = []
for i in range(120):
    a = TmsAccount(login="pager%03d" % i, fullname="Pager %d" % i, pin_md5=pin, contract_info="C-%d" % i).create()
    check(a is not None and a.id, "create account %d" % i)
    created.append(a.id)


def get_accounts_with_paging():
    accounts, total = TmsAccount.get_list()
    if total > len(accounts):
        while True:
            if total == len(accounts):
                break
            page_accounts, _ = TmsAccount.get_list(start=len(accounts), limit=50, sort="id")
            accounts.extend(page_accounts)
    return accounts


got = [a.id for a in get_accounts_with_paging()]
check(sorted(got) == sorted(created) and len(set(got)) == 120, "the example's paging: %d accounts" % len(got))

for limit, sort in ((7, "id"), (50, "-id"), (33, "login"), (120, "")):
    seen, start, total = [], 0, None
    while True:
        page, total = TmsAccount.get_list(start=start, limit=limit, sort=sort)
        seen.extend(a.id for a in page)
        start += len(page)
        if start >= total:
            break
    check(total == 120 and len(seen) == 120 and len(set(seen)) == 120, "pages of %d sorted by %r" % (limit, sort))
    if sort == "-id":
        check(seen == sorted(seen, reverse=True), "descending ids")
    if sort == "login":
        logins = [TmsAccount.get(i).login for i in seen[:5]]
        check(logins == sorted(logins), "sorted by login")

page, total = TmsAccount.get_list(start=100, limit=50, sort="id")
check(total == 120 and len(page) == 20, "the last, short page")
page, total = TmsAccount.get_list(quick_search="pager11")
check(total == 10 and all(a.login.startswith("pager11") for a in page), "quick_search narrows: %d" % total)
print("paging: ok")
