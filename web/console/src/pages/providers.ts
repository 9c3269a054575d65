// Providers with their billing settings. The billing token is write-only:
// the API says only whether one is set.
import { currentAdmin, getAll, request } from '../api'
import { h, replace, field, table, yesNo } from '../dom'
import { Page, heading, editor } from '../app'

export interface Provider {
  id: number; name: string; enabled: boolean; devices_per_account_limit: number | null
  comment: string | null; logo_url: string | null
  billing: { resolve: boolean; url: string | null; token_set: boolean }
}

export async function providersPage(p: Page): Promise<void> {
  const superadmin = currentAdmin()!.provider === null
  const list = h('div', { class: 'reserve' })
  const box = h('section', { class: 'card', 'aria-label': 'Provider editor', hidden: true })
  p.root.append(heading('Providers',
    superadmin ? h('button', { type: 'button', onclick: () => edit(null) }, 'New provider') : h('span')),
  p.status, box, list)

  async function load(): Promise<void> {
    const rows = await p.guard('Loading providers', () => getAll<Provider>('/api/admin/providers', {}, { signal: p.signal }))
    if (!rows) return
    replace(list, table('Providers', ['ID', 'Name', 'Enabled', 'Device limit', 'Billing', 'Billing URL', 'Token', ''],
      rows.map((v) => [v.id, v.name, yesNo(v.enabled), v.devices_per_account_limit ?? '—',
        v.billing.resolve ? 'resolve' : 'off', v.billing.url ?? '—', v.billing.token_set ? 'set' : 'not set',
        h('button', { type: 'button', class: 'small', onclick: () => edit(v) }, 'Edit')])))
  }

  function edit(v: Provider | null): void {
    const name = h('input', { value: v?.name ?? '', required: true, maxlength: 100 })
    const enabled = h('input', { type: 'checkbox', checked: v?.enabled ?? true })
    const limit = h('input', { type: 'number', min: 0, value: v?.devices_per_account_limit ?? '' })
    const resolve = h('input', { type: 'checkbox', checked: v?.billing.resolve ?? false })
    const url = h('input', { type: 'url', value: v?.billing.url ?? '', placeholder: 'https://billing.example/api' })
    const token = h('input', { type: 'password', autocomplete: 'new-password', placeholder: v?.billing.token_set ? 'set — leave empty to keep' : 'not set' })
    const clear = h('input', { type: 'checkbox' })
    editor(p, box, v ? `Provider ${v.id}` : 'New provider', v ? 'Save' : 'Create', [
      field('Name', name), field('Device limit per account', limit, 'empty: unlimited'),
      h('div', { class: 'field check' }, h('label', null, enabled, ' Enabled')),
      h('fieldset', null, h('legend', null, 'Billing'),
        h('div', { class: 'field check' }, h('label', null, resolve, ' Resolve subscribers through the billing')),
        field('Billing URL', url),
        field('Token', token, 'write-only: never shown'),
        v?.billing.token_set ? h('div', { class: 'field check' }, h('label', null, clear, ' Remove the token')) : null),
    ], () => {
      const billing: Record<string, unknown> = { resolve: resolve.checked, url: url.value.trim() || null }
      if (clear.checked) billing.token = null
      else if (token.value) billing.token = token.value
      const body: Record<string, unknown> = { name: name.value.trim(), enabled: enabled.checked, billing,
        devices_per_account_limit: limit.value === '' ? null : Number(limit.value) }
      return v ? request('PUT', `/api/admin/providers/${v.id}`, body) : request('POST', '/api/admin/providers', body)
    }, load)
  }

  await load()
}
