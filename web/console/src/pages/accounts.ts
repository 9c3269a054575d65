// Accounts: search by login, contract, remote_custom_field or a device's
// MAC, a page at a time. Paging asks the API for one page (start, limit),
// so a million accounts page as fast as a hundred.
import { currentAdmin, get, getAll, query, List } from '../api'
import { h, replace, field, table, fmtTime, ago } from '../dom'
import { Page, heading, go } from '../app'
import type { Provider } from './providers'

export interface Account {
  id: number; login: string; fullname: string; provider: number; enabled: boolean
  contract_info: string | null; remote_custom_field: string | null; main_address: string | null
  account_desc: string | null; region_tag: number | null; devices_per_account_limit: number | null
  created: number; updated: number; last_online: number | null; services_available: boolean
}

export const pageSize = 25

const modes: [string, string][] = [
  ['quick', 'Login, name or contract'],
  ['login', 'Login (exact)'],
  ['remote_custom_field', 'remote_custom_field (exact)'],
  ['mac', 'Device MAC'],
]

export async function accountsPage(p: Page): Promise<void> {
  const me = currentAdmin()!
  const params = p.params
  const q = h('input', { type: 'search', name: 'q', value: params.get('q') ?? '', placeholder: 'alice, 10-2025-7, 00:1a:79:…', autocomplete: 'off' })
  const mode = h('select', { name: 'mode' }, modes.map(([v, l]) => h('option', { value: v, selected: v === (params.get('mode') ?? 'quick') }, l)))
  const provider = h('select', { name: 'provider' }, h('option', { value: '' }, me.provider === null ? 'All providers' : 'My provider'))
  const sort = h('select', { name: 'sort' },
    // Only id orders: the read model pages them without sorting, at any size.
    [['-id', 'Newest first'], ['id', 'Oldest first']].map(([v, l]) =>
      h('option', { value: v, selected: v === (params.get('sort') ?? '-id') }, l)))
  const pageNo = Math.max(1, Number(params.get('page') ?? '1') || 1)
  const list = h('div', { class: 'reserve reserve-accounts' })
  const pager = h('nav', { class: 'pager', 'aria-label': 'Pages' })
  const summary = h('p', { class: 'summary', 'aria-live': 'polite' }, '\u00a0')

  const submit = (page = 1) => {
    go('#/accounts' + query({ q: q.value.trim(), mode: mode.value, provider: provider.value, sort: sort.value, page: page > 1 ? page : null }))
  }
  p.root.append(heading('Accounts'),
    h('form', { class: 'filters', role: 'search', onsubmit: (e: Event) => { e.preventDefault(); submit() } },
      field('Search', q), field('In', mode), field('Provider', provider), field('Order', sort),
      h('button', { type: 'submit' }, 'Search')),
    p.status, summary, list, pager)

  void getAll<Provider>('/api/admin/providers', {}, { signal: p.signal }).then((ps) => {
    for (const v of ps) provider.append(h('option', { value: v.id, selected: String(v.id) === params.get('provider') }, `${v.name} (${v.id})`))
  }).catch(() => {})

  const text = q.value.trim()
  const filters: Record<string, string | number> = {}
  const chosen = params.get('provider')
  if (chosen) filters.provider = chosen
  let result: List<Account> | undefined
  if (mode.value === 'mac' && text) {
    result = await p.guard('Searching devices', async () => {
      const devs = await get<List<{ account: number }>>('/api/provider/devices' + query({ ...filters, mac: text, limit: 100 }), { signal: p.signal })
      const ids = [...new Set(devs.data.map((d) => d.account))]
      const accs = await Promise.all(ids.map((id) => get<Account>(`/api/provider/accounts/${id}`, { signal: p.signal })))
      return { data: accs, total: accs.length, start: 0, limit: accs.length }
    })
  } else {
    const f: Record<string, string | number> = { ...filters }
    if (text) {
      if (mode.value === 'quick') f.quick_search = text
      else f[mode.value] = text
    }
    result = await p.guard('Loading accounts', () => get<List<Account>>('/api/provider/accounts' +
      query({ ...f, sort: sort.value, start: (pageNo - 1) * pageSize, limit: pageSize }), { signal: p.signal }))
  }
  if (!result) return
  const pages = Math.max(1, Math.ceil(result.total / pageSize))
  summary.textContent = result.total === 0 ? 'No accounts match.'
    : `${result.total.toLocaleString('en')} accounts; page ${Math.min(pageNo, pages).toLocaleString('en')} of ${pages.toLocaleString('en')}`
  replace(list, table('Accounts', ['ID', 'Login', 'Full name', 'Provider', 'Contract', 'Enabled', 'Services', 'Last online', 'Changed'],
    result.data.map((a) => [
      a.id, h('a', { href: `#/accounts/${a.id}` }, a.login), a.fullname, a.provider, a.contract_info ?? '',
      a.enabled ? 'yes' : h('span', { class: 'warn' }, 'disabled'),
      a.services_available ? 'yes' : 'no',
      h('span', { title: fmtTime(a.last_online) }, a.last_online ? ago(a.last_online) : 'never'),
      fmtTime(a.updated),
    ])))
  if (mode.value !== 'mac') pagerFor(pager, pageNo, pages, submit)
}

function pagerFor(el: HTMLElement, current: number, pages: number, to: (n: number) => void): void {
  const btn = (label: string, n: number, disabled: boolean, aria: string) =>
    h('button', { type: 'button', class: 'secondary', disabled, 'aria-label': aria, onclick: () => to(n) }, label)
  const jump = h('input', { type: 'number', min: 1, max: pages, value: current, 'aria-label': 'Page number', class: 'page-no' })
  replace(el,
    btn('«', 1, current <= 1, 'First page'), btn('‹ Prev', current - 1, current <= 1, 'Previous page'),
    h('form', { onsubmit: (e: Event) => { e.preventDefault(); to(Math.min(pages, Math.max(1, Number(jump.value) || 1))) } },
      h('label', null, 'Page ', jump, ` of ${pages.toLocaleString('en')}`)),
    btn('Next ›', current + 1, current >= pages, 'Next page'), btn('»', pages, current >= pages, 'Last page'))
}
