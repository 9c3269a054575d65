// One account: its fields, subscriptions, devices (online now, last seen,
// firmware, address), its history as a diff timeline, and a command to it
// or one of its devices.
import { get, getAll, request } from '../api'
import { h, replace, table, fmtTime, ago, yesNo, Child } from '../dom'
import { Page, heading } from '../app'
import type { Account } from './accounts'
import type { Tariff } from './catalog'
import { commandForm } from './commands'

interface Subscription { id: number; account: number; tarif: number; start: string; stop: string | null; device?: number; time_shift_depth: number | null }
export interface Device {
  id: number; unique_id: string; account: number; provider: number; ipaddr: string | null; mac: string | null
  comment: string | null; last_online: string | null; first_online: string | null; last_fw_ver: string | null
  operation_system: string | null; class: string; model: string | null; created: string; online?: boolean
}
interface Change { field: string; old: unknown; new: unknown; secret?: boolean }
interface HistoryEntry { revision: number; type: string; summary: string; time: string; actor: string; request_id: string; changes: Change[] }

export async function accountPage(p: Page, id: number): Promise<void> {
  const title = heading(`Account ${id}`)
  const fields = h('section', { class: 'card reserve-card', 'aria-labelledby': 'acc-fields' })
  const subs = h('section', { class: 'card', 'aria-labelledby': 'acc-subs' }, h('h2', { id: 'acc-subs' }, 'Subscriptions'))
  const devs = h('section', { class: 'card', 'aria-labelledby': 'acc-devs' }, h('h2', { id: 'acc-devs' }, 'Devices'))
  const send = h('section', { class: 'card', 'aria-labelledby': 'acc-send' })
  const eraseBox = h('div', { class: 'erase', 'aria-live': 'polite' })
  const hist = h('section', { class: 'card', 'aria-labelledby': 'acc-hist' }, h('h2', { id: 'acc-hist' }, 'History'))
  const columns = h('div', { class: 'columns' }, h('div', null, fields, subs, devs, send), hist)
  p.root.append(title, p.status, columns)

  const acc = await p.guard('Loading the account', () => get<Account>(`/api/provider/accounts/${id}`, { signal: p.signal }))
  if (!acc) {
    columns.remove() // the status line says why
    return
  }
  title.querySelector('h1')!.textContent = `${acc.login} — ${acc.fullname}`
  renderFields(acc)

  const tariffs = new Map<number, string>()
  void getAll<Tariff>('/api/admin/tariffs', { provider: acc.provider }, { signal: p.signal }).then((ts) => {
    ts.forEach((t) => tariffs.set(t.id, t.name))
    void loadSubs()
  }).catch(() => void loadSubs())

  function renderFields(a: Account): void {
    const toggle = h('button', {
      type: 'button', class: 'secondary', onclick: async () => {
        toggle.disabled = true
        const next = await p.guard(a.enabled ? 'Disabling' : 'Enabling',
          () => request<Account>('PUT', `/api/provider/accounts/${a.id}`, { enabled: !a.enabled }))
        toggle.disabled = false
        if (next) { renderFields(next); void loadHistory() }
      },
    }, a.enabled ? 'Disable account' : 'Enable account')
    const row = (k: string, v: Child) => [h('dt', null, k), h('dd', null, v ?? '—')]
    replace(fields, h('h2', { id: 'acc-fields' }, 'Account'),
      h('dl', { class: 'kv' },
        row('ID', a.id), row('Login', a.login), row('Full name', a.fullname), row('Provider', a.provider),
        row('Enabled', a.enabled ? 'yes' : h('span', { class: 'warn' }, 'no')),
        row('Services available', yesNo(a.services_available)),
        row('Contract', a.contract_info), row('remote_custom_field', a.remote_custom_field),
        row('Address', a.main_address), row('Region', a.region_tag), row('Device limit', a.devices_per_account_limit ?? 'provider\'s'),
        row('Created', fmtTime(a.created)), row('Changed', fmtTime(a.updated)),
        row('Last online', a.last_online ? `${fmtTime(a.last_online)} (${ago(a.last_online)})` : 'never')),
      h('div', { class: 'actions' }, toggle,
        h('button', { type: 'button', class: 'secondary', onclick: () => void exportData(a) }, 'Export data'),
        h('button', { type: 'button', class: 'secondary danger', onclick: () => confirmErase(a) }, 'Erase personal data…')),
      eraseBox)
  }

  // exportData downloads everything held about the subscriber
  // (GET /accounts/{id}/export) as a JSON file.
  async function exportData(a: Account): Promise<void> {
    const doc = await p.guard('Exporting', () => get<unknown>(`/api/provider/accounts/${a.id}/export`, { signal: p.signal }))
    if (doc === undefined) return
    const url = URL.createObjectURL(new Blob([JSON.stringify(doc, null, 2)], { type: 'application/json' }))
    const link = h('a', { href: url, download: `account-${a.id}-export.json` }) as HTMLAnchorElement
    link.click()
    setTimeout(() => URL.revokeObjectURL(url), 60000)
  }

  // confirmErase asks for the account's login before erasing it: an
  // erasure cannot be undone.
  function confirmErase(a: Account): void {
    const typed = h('input', { type: 'text', name: 'confirm-login', autocomplete: 'off', 'aria-label': 'Login to confirm' }) as HTMLInputElement
    const force = h('input', { type: 'checkbox', name: 'force' }) as HTMLInputElement
    const go = h('button', { type: 'button', class: 'danger', disabled: true, onclick: async () => {
      go.disabled = true
      const done = await p.guard('Erasing', () => request<{ id: number; erased: boolean }>('POST',
        `/api/provider/accounts/${a.id}/erase${force.checked ? '?force=true' : ''}`))
      if (!done) { go.disabled = false; return }
      columns.replaceWith(h('section', { class: 'card erased' }, h('h2', null, `Account ${a.id} is erased`),
        h('p', null, 'Its personal data can no longer be read anywhere; its history keeps the facts, every personal value as “erased”.')))
      title.querySelector('h1')!.textContent = `Account ${a.id} (erased)`
    } }, 'Erase for good') as HTMLButtonElement
    typed.addEventListener('input', () => { go.disabled = typed.value !== a.login })
    replace(eraseBox,
      h('p', { class: 'warn' }, 'Erasing destroys the key this subscriber\'s personal data is encrypted under: it cannot be undone. Type the login, ',
        h('code', null, a.login), ', to confirm.'),
      typed, h('label', null, force, ' even if a subscription has not ended'),
      h('div', { class: 'actions' }, go, h('button', { type: 'button', class: 'secondary', onclick: () => eraseBox.replaceChildren() }, 'Cancel')))
    typed.focus()
  }

  async function loadSubs(): Promise<void> {
    const rows = await p.guard('Loading subscriptions', async () => {
      const [own, perDevice] = await Promise.all([
        getAll<Subscription>('/api/provider/account_subscriptions', { account: id }, { signal: p.signal }),
        getAll<Subscription>('/api/provider/device_subscriptions', { account: id }, { signal: p.signal }),
      ])
      return [...own, ...perDevice].sort((x, y) => x.start.localeCompare(y.start))
    })
    if (!rows) return
    const now = Date.now()
    const state = (s: Subscription) => {
      const start = Date.parse(s.start.replace(/([+-]\d\d)(\d\d)$/, '$1:$2'))
      const stop = s.stop ? Date.parse(s.stop.replace(/([+-]\d\d)(\d\d)$/, '$1:$2')) : Infinity
      return start > now ? 'future' : stop <= now ? 'ended' : 'active'
    }
    subs.replaceChildren(h('h2', { id: 'acc-subs' }, 'Subscriptions'), rows.length === 0 ? h('p', null, 'None.') :
      table('Subscriptions', ['ID', 'Tariff', 'For', 'Start', 'Stop', 'State'], rows.map((s) => [
        s.id, tariffs.get(s.tarif) ? `${tariffs.get(s.tarif)} (${s.tarif})` : s.tarif,
        s.device ? `device ${s.device}` : 'account', fmtTime(s.start), fmtTime(s.stop) || 'open', state(s)])))
  }

  async function loadDevices(): Promise<void> {
    const rows = await getAll<Device>('/api/provider/devices', { account: id }, { signal: p.signal })
    devs.replaceChildren(h('h2', { id: 'acc-devs' }, 'Devices'), rows.length === 0 ? h('p', null, 'No bound devices.') :
      table('Devices', ['ID', 'Unique id', 'Class', 'Model', 'Online', 'Last seen', 'Firmware', 'Address', ''], rows.map((d) => [
        d.id, d.unique_id, d.class, d.model ?? '',
        d.online ? h('span', { class: 'online' }, '● online') : h('span', { class: 'offline' }, '○ offline'),
        h('span', { title: fmtTime(d.last_online) }, ago(d.last_online)),
        [d.last_fw_ver, d.operation_system].filter(Boolean).join(' / '), d.ipaddr ?? '',
        h('button', { type: 'button', class: 'small', onclick: () => commandTo('devices', d.id) }, 'Send…')])))
  }

  function commandTo(recipients: string, target: number): void {
    replace(send, h('h2', { id: 'acc-send' }, `Send a command to ${recipients === 'devices' ? 'device' : 'account'} ${target}`),
      commandForm(p, recipients, [target]))
    send.querySelector('select, input, textarea')?.scrollIntoView({ block: 'nearest' })
    ;(send.querySelector('select') as HTMLElement | null)?.focus()
  }
  replace(send, h('h2', { id: 'acc-send' }, 'Send a command'),
    h('button', { type: 'button', class: 'secondary', onclick: () => commandTo('accounts', id) }, 'Send a command to this account…'))

  async function loadHistory(): Promise<void> {
    const r = await get<{ data: HistoryEntry[] }>(`/api/provider/accounts/${id}/history`, { signal: p.signal })
    hist.replaceChildren(h('h2', { id: 'acc-hist' }, 'History'),
      h('ol', { class: 'timeline', reversed: true }, r.data.slice().reverse().map((e) => h('li', null,
        h('div', { class: 'when' }, h('time', { datetime: e.time }, fmtTime(e.time)), ' · ', e.actor || 'system'),
        h('div', { class: 'what' }, h('strong', null, e.summary || e.type), ' ', h('code', { class: 'muted' }, e.type)),
        e.changes.length ? h('table', { class: 'diff' },
          h('colgroup', null, h('col'), h('col'), h('col')),
          h('thead', { class: 'sr-only' }, h('tr', null, h('th', null, 'Field'), h('th', null, 'Old'), h('th', null, 'New'))),
          h('tbody', null, e.changes.map((c) => h('tr', null,
            h('th', { scope: 'row' }, fieldName(c.field)),
            c.secret ? h('td', { colspan: 2 }, h('em', null, 'changed (secret, not shown)'))
              : [h('td', null, h('del', null, show(c.old))), h('td', null, h('ins', null, show(c.new)))])))) : null,
        e.request_id ? h('div', { class: 'muted small' }, 'request ', e.request_id) : null))))
  }

  await Promise.all([
    p.guard('Loading devices', loadDevices),
    p.guard('Loading history', loadHistory),
  ])
  // Online state and last seen move on their own: refresh them.
  p.every(10000, async () => { await loadDevices() })
}

// fieldName lets a long field name (subscriptions[1734].time_shift_depth)
// wrap in its cell: a line may break before a bracket and after a dot or an
// underscore (style.css breaks a part still too long anywhere).
function fieldName(name: string): Child[] {
  return name.split(/(?=\[)|(?<=[._])/).flatMap((part, i) => (i === 0 ? [part] : [h('wbr'), part]))
}

function show(v: unknown): string {
  if (v === null || v === undefined) return '∅'
  if (typeof v === 'object') return JSON.stringify(v)
  if (typeof v === 'string' && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4}$/.test(v)) return fmtTime(v)
  return String(v)
}
