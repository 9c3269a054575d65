// Sending a command to accounts, devices or a provider, and its receipts,
// which refresh while devices acknowledge.
import { currentAdmin, request, get } from '../api'
import { h, replace, field, table, fmtTime } from '../dom'
import { Page, heading, go } from '../app'

interface SendAnswer { response: boolean; send_id: number }
interface Receipt { device: number; status: string; sent: string | null; acked: string | null; confirmed: string | null }
interface CommandState {
  index: number; command: Record<string, unknown>; post_time: string | null; ttl: number | null; state: string
  counts: { sent: number; acked: number; confirmed: number }; receipts: Receipt[]
}
interface Receipts { send_id: number; recipients: string; ids: number[]; issued: string; issued_by: string; commands: CommandState[] }

const kinds = ['user_message', 'switch_to_channel', 'refresh_channel_list', 'reinit', 'restart', 'update']

// commandForm is the form that sends one command; on success it opens the
// send's receipts.
export function commandForm(p: Page, recipients = 'accounts', ids: number[] = []): HTMLElement {
  const rec = h('select', null, ['accounts', 'devices', 'providers'].map((r) => h('option', { value: r, selected: r === recipients }, r)))
  const idsIn = h('input', { value: ids.join(', '), required: true, inputmode: 'numeric', placeholder: '7, 12' })
  const kind = h('select', null, kinds.map((k) => h('option', { value: k }, k)))
  const type = h('select', null, ['notify', 'confirm', 'ticker'].map((t) => h('option', { value: t }, t)))
  const text = h('textarea', { rows: 2, maxlength: 4096, placeholder: 'Your message' })
  const channel = h('input', { type: 'number', min: 1 })
  const ttl = h('input', { type: 'number', min: 1, max: 525600, placeholder: 'none' })
  const msgFields = h('div', { class: 'grid' }, field('Message type', type), field('Text', text))
  const chanFields = h('div', { class: 'grid' }, field('Channel id', channel))
  // Only the fields of the command chosen show (style.css makes hidden win
  // over the grid's display).
  const sync = () => {
    msgFields.hidden = kind.value !== 'user_message'
    chanFields.hidden = kind.value !== 'switch_to_channel'
  }
  kind.addEventListener('change', sync)
  sync()
  const button = h('button', { type: 'submit' }, 'Send')
  return h('form', {
    class: 'command-form',
    onsubmit: async (ev: Event) => {
      ev.preventDefault()
      const cmd: Record<string, unknown> = { command: kind.value }
      if (kind.value === 'user_message') { cmd.type = type.value; cmd.text = text.value }
      if (kind.value === 'switch_to_channel') cmd.channel = Number(channel.value)
      if (ttl.value) cmd.ttl = Math.floor(Date.now() / 1000) + Number(ttl.value) * 60
      const list = idsIn.value.split(/[\s,;]+/).filter(Boolean).map(Number)
      button.disabled = true
      const r = await p.guard('Sending', () => request<SendAnswer>('POST',
        `/api/provider/commands/send/${rec.value}?broadcast=false`, { ids: list, commands: [cmd] }))
      button.disabled = false
      if (r) go(`#/commands/${r.send_id}`)
    },
  },
  h('div', { class: 'grid' }, field('To', rec), field('Ids', idsIn, 'comma separated'), field('Command', kind),
    field('Expires after (minutes)', ttl, 'empty: only devices connected now')),
  msgFields, chanFields, h('div', { class: 'actions' }, button))
}

export function sendPage(p: Page): void {
  const me = currentAdmin()!
  const recipients = p.params.get('to') ?? 'accounts'
  const ids = (p.params.get('ids') ?? (recipients === 'providers' && me.provider !== null ? String(me.provider) : ''))
    .split(',').filter(Boolean).map(Number)
  const open = h('input', { type: 'number', min: 1, 'aria-label': 'Send id' })
  p.root.append(heading('Commands'), p.status,
    h('section', { class: 'card' }, h('h2', null, 'Send a command'), commandForm(p, recipients, ids)),
    h('section', { class: 'card' }, h('h2', null, 'Receipts of a send'),
      h('form', { class: 'filters', onsubmit: (e: Event) => { e.preventDefault(); if (open.value) go(`#/commands/${open.value}`) } },
        field('Send id', open), h('button', { type: 'submit', class: 'secondary' }, 'Open'))))
}

// receiptsPage shows a send's receipts, refreshed every second while the
// page is open: devices acknowledge at their own pace.
export function receiptsPage(p: Page, sendId: number): void {
  const body = h('div', { class: 'reserve' })
  const live = h('p', { class: 'muted', 'aria-live': 'off' })
  p.root.append(heading(`Send ${sendId}`), p.status, live, body)
  let first = true
  p.every(1000, async () => {
    const r = await (first ? p.guard('Loading receipts', () => get<Receipts>(`/api/provider/commands/${sendId}?limit=100`, { signal: p.signal }))
      : get<Receipts>(`/api/provider/commands/${sendId}?limit=100`, { signal: p.signal }))
    first = false
    if (!r) return
    live.textContent = `Updated ${new Date().toLocaleTimeString()}`
    replace(body,
      h('dl', { class: 'kv' },
        h('dt', null, 'To'), h('dd', null, `${r.recipients} ${r.ids.join(', ')}`),
        h('dt', null, 'Issued'), h('dd', null, `${fmtTime(r.issued)} by ${r.issued_by}`)),
      r.commands.map((c) => {
        const frac = c.counts.sent ? c.counts.acked / c.counts.sent : 0
        return h('section', { class: 'card', 'aria-label': `Command ${c.index}` },
          h('h2', null, `${c.index + 1}. ${String(c.command.command)}`, ' ', h('span', { class: `badge ${c.state}` }, c.state)),
          c.command.text ? h('p', null, '“', String(c.command.text), '”') : null,
          h('div', { class: 'counts', role: 'status', 'aria-live': 'polite' },
            h('progress', { max: 1, value: frac, 'aria-label': 'Acknowledged' }),
            h('span', { 'data-count': 'sent' }, `sent ${c.counts.sent}`), ' · ',
            h('span', { 'data-count': 'acked' }, `acked ${c.counts.acked}`), ' · ',
            h('span', { 'data-count': 'confirmed' }, `confirmed ${c.counts.confirmed}`)),
          c.receipts.length === 0 ? h('p', { class: 'muted' }, c.state === 'queued' ? 'Waiting for its send time.' : 'No device has received it yet.')
            : table('Receipts', ['Device', 'Status', 'Sent', 'Acked', 'Confirmed'], c.receipts.map((x) => [
              x.device, h('span', { class: `badge ${x.status}` }, x.status), fmtTime(x.sent), fmtTime(x.acked), fmtTime(x.confirmed)])))
      }))
  })
}
