// Tariffs and channels (the Admin API's catalog).
import { currentAdmin, getAll, request } from '../api'
import { h, replace, field, table, yesNo } from '../dom'
import { Page, heading, editor } from '../app'
import type { Provider } from './providers'

export interface Tariff { id: number; provider: number; name: string; enabled: boolean; channels: number[]; description: string | null }
export interface Channel { id: number; name: string; number: number; enabled: boolean; logo_url: string | null; categories: number[] }

export async function tariffsPage(p: Page): Promise<void> {
  const me = currentAdmin()!
  const list = h('div', { class: 'reserve' })
  const box = h('section', { class: 'card', 'aria-label': 'Tariff editor', hidden: true })
  const provider = h('select', { 'aria-label': 'Provider' })
  p.root.append(heading('Tariffs', h('button', { type: 'button', onclick: () => edit(null) }, 'New tariff')),
    h('form', { class: 'filters', onsubmit: (e: Event) => { e.preventDefault(); void load() } },
      field('Provider', provider), h('button', { type: 'submit', class: 'secondary' }, 'Show')),
    p.status, box, list)

  const [providers, channels] = await Promise.all([
    getAll<Provider>('/api/admin/providers', {}, { signal: p.signal }),
    getAll<Channel>('/api/admin/channels', {}, { signal: p.signal }),
  ])
  const channelName = new Map(channels.map((c) => [c.id, c.name]))
  const providerName = new Map(providers.map((v) => [v.id, v.name]))
  replace(provider, me.provider === null ? h('option', { value: '' }, 'All providers') : null,
    providers.map((v) => h('option', { value: v.id }, `${v.name} (${v.id})`)))

  async function load(): Promise<void> {
    const rows = await p.guard('Loading tariffs', () =>
      getAll<Tariff>('/api/admin/tariffs', { provider: provider.value }, { signal: p.signal }))
    if (!rows) return
    replace(list, table('Tariffs', ['ID', 'Name', 'Provider', 'Enabled', 'Channels', 'Description', ''],
      rows.map((t) => [t.id, t.name, providerName.get(t.provider) ?? t.provider, yesNo(t.enabled),
        h('span', { class: 'clip', title: t.channels.map((c) => channelName.get(c) ?? c).join(', ') },
          `${t.channels.length}: ` + t.channels.slice(0, 5).map((c) => channelName.get(c) ?? c).join(', ') + (t.channels.length > 5 ? ', …' : '')),
        t.description ?? '',
        h('button', { type: 'button', class: 'small', onclick: () => edit(t) }, 'Edit')])))
  }

  function edit(t: Tariff | null): void {
    const name = h('input', { value: t?.name ?? '', required: true, maxlength: 100 })
    const prov = h('select', { disabled: t !== null }, providers.map((v) =>
      h('option', { value: v.id, selected: v.id === (t?.provider ?? Number(provider.value || providers[0]?.id)) }, v.name)))
    const enabled = h('input', { type: 'checkbox', checked: t?.enabled ?? true })
    const description = h('textarea', { rows: 2, maxlength: 1000 }, t?.description ?? '')
    const chans = h('select', { multiple: true, size: Math.min(8, Math.max(3, channels.length)) },
      channels.map((c) => h('option', { value: c.id, selected: t?.channels.includes(c.id) ?? false }, `${c.number}. ${c.name}`)))
    editor(p, box, t ? `Tariff ${t.id}` : 'New tariff', t ? 'Save' : 'Create', [
      field('Name', name), field('Provider', prov),
      h('div', { class: 'field check' }, h('label', null, enabled, ' Enabled')),
      field('Channels', chans, 'Ctrl or Shift to choose several'), field('Description', description),
    ], () => {
      const body: Record<string, unknown> = {
        name: name.value.trim(), enabled: enabled.checked, description: description.value.trim() || null,
        channels: Array.from(chans.selectedOptions).map((o) => Number(o.value)),
      }
      if (!t) body.provider = Number(prov.value)
      return t ? request('PUT', `/api/admin/tariffs/${t.id}`, body) : request('POST', '/api/admin/tariffs', body)
    }, load)
  }
  await load()
}

export async function channelsPage(p: Page): Promise<void> {
  const superadmin = currentAdmin()!.provider === null
  const list = h('div', { class: 'reserve' })
  const box = h('section', { class: 'card', 'aria-label': 'Channel editor', hidden: true })
  const search = h('input', { type: 'search', placeholder: 'name', 'aria-label': 'Search channels' })
  p.root.append(heading('Channels', superadmin ? h('button', { type: 'button', onclick: () => edit(null) }, 'New channel') : h('span')),
    h('form', { class: 'filters', onsubmit: (e: Event) => { e.preventDefault(); void load() } },
      field('Search', search), h('button', { type: 'submit', class: 'secondary' }, 'Search')),
    p.status, box, list)

  async function load(): Promise<void> {
    const rows = await p.guard('Loading channels', () =>
      getAll<Channel>('/api/admin/channels', { quick_search: search.value.trim() }, { signal: p.signal }))
    if (!rows) return
    replace(list, table('Channels', ['ID', 'Number', 'Name', 'Enabled', 'Categories', ''],
      rows.map((c) => [c.id, c.number, c.name, yesNo(c.enabled), c.categories.join(', '),
        superadmin ? h('button', { type: 'button', class: 'small', onclick: () => edit(c) }, 'Edit') : '']), 'narrow'))
  }

  function edit(c: Channel | null): void {
    const name = h('input', { value: c?.name ?? '', required: true, maxlength: 100 })
    const number = h('input', { type: 'number', min: 0, value: c?.number ?? '', required: true })
    const enabled = h('input', { type: 'checkbox', checked: c?.enabled ?? true })
    editor(p, box, c ? `Channel ${c.id}` : 'New channel', c ? 'Save' : 'Create', [
      field('Name', name), field('Number', number),
      h('div', { class: 'field check' }, h('label', null, enabled, ' Enabled')),
    ], () => {
      const body = { name: name.value.trim(), number: Number(number.value), enabled: enabled.checked }
      return c ? request('PUT', `/api/admin/channels/${c.id}`, body) : request('POST', '/api/admin/channels', body)
    }, load)
  }
  await load()
}
