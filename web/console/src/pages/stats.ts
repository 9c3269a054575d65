// Statistics over any range of closed days: subscriptions per tariff per
// day, active accounts per tariff per day, viewing minutes by device class
// and the top channels, each with a CSV of the numbers the chart shows,
// all read from the Statistics API.
import { currentAdmin, get, getAll, requestText, query } from '../api'
import { h, replace, field } from '../dom'
import { Page, heading, go, setBusy, clearStatus, showError } from '../app'
import { lineChart, barChart, csv, download, ChartElement, DailyData, Series } from '../charts'
import type { Provider } from './providers'

interface TariffStat { tariff_id: number; name: string; enabled_count: number; enabled_device_count: number; active_count: number; disabled_count: number; enabled_account_with_devices: number }
interface SubscriptionAnswer { from: string; to: string; provider_stat: { provider_id: number; subscriptions_stat: { date: string; subscriptions: TariffStat[] }[] }[] }
interface DeviceStat { class: string; live_minutes: number; dvr_minutes: number; unique_devices: number }
interface DeviceAnswer { provider_stat: { provider_id: number; device_stat: DeviceStat[] }[] }
interface AccountAnswer {
  provider_stat: {
    providerId: number
    account_stat: { account_id: number; channels: { channel_id: number; live_minutes: number; dvr_minutes: number }[] }[]
    channels: { id: number; name: string }[]
  }[]
}

const day = (d: Date) => d.toISOString().slice(0, 10)
const addDays = (s: string, n: number) => { const d = new Date(s + 'T00:00:00Z'); d.setUTCDate(d.getUTCDate() + n); return day(d) }

// The ranges offered, in days ending yesterday; the page opens on 90 days.
const ranges: [number, string][] = [[7, '7 days'], [30, '30 days'], [90, '90 days'], [365, '1 year'], [1096, '3 years']]
const defaultDays = 90

export async function statsPage(p: Page): Promise<void> {
  const me = currentAdmin()!
  const yesterday = addDays(day(new Date()), -1)
  const to = h('input', { type: 'date', value: p.params.get('to') ?? yesterday, required: true })
  const from = h('input', { type: 'date', value: p.params.get('from') ?? addDays(yesterday, -(defaultDays - 1)), required: true })
  const provider = h('select', null, me.provider === null ? h('option', { value: '' }, 'All providers') : null)
  // The button of the range shown, if it is one of them, is marked pressed.
  const presets = h('div', { class: 'presets', role: 'group', 'aria-label': 'Ranges' },
    ranges.map(([n, l]) => h('button', {
      type: 'button', class: 'secondary small',
      'aria-pressed': String(to.value === yesterday && from.value === addDays(yesterday, -(n - 1))),
      onclick: () => { to.value = yesterday; from.value = addDays(yesterday, -(n - 1)); submit() },
    }, l)))
  const submit = () => go('#/stats' + query({ from: from.value, to: to.value, provider: provider.value || p.params.get('provider') }))
  const csvButton = (name: string, make: () => string) =>
    h('button', { type: 'button', class: 'secondary small', 'data-csv': name, onclick: () => download(name, make()) }, 'CSV')

  const subsChart: ChartElement = h('div', { class: 'chart line', id: 'chart-subscriptions' })
  const activeChart: ChartElement = h('div', { class: 'chart line', id: 'chart-active' })
  const classChart: ChartElement = h('div', { class: 'chart bars-box', id: 'chart-classes' })
  const channelChart: ChartElement = h('div', { class: 'chart bars-box', id: 'chart-channels' })
  const closed = h('span', { class: 'muted' })
  let subs: SubscriptionAnswer | null = null
  let devices: DeviceAnswer | null = null
  let channels: { id: number; name: string; live: number; dvr: number }[] = []
  const section = (id: string, title: string, chart: HTMLElement, name: string, make: () => string) =>
    h('section', { class: 'card chart-card', 'aria-labelledby': id },
      h('div', { class: 'card-head' }, h('h2', { id }, title), csvButton(name, make)), chart)

  const charts = h('div', { class: 'charts', 'data-state': 'loading' },
    section('h-subs', 'Enabled subscribers per tariff, per day', subsChart, 'subscriptions.csv', subscriptionsCSV),
    section('h-active', 'Active accounts per tariff, per day (watched that day)', activeChart, 'subscriptions.csv', subscriptionsCSV),
    section('h-classes', 'Viewing minutes by device class', classChart, 'device-classes.csv', classesCSV),
    section('h-channels', 'Top channels by viewing minutes', channelChart, 'top-channels.csv', channelsCSV))
  p.root.append(heading('Statistics', closed),
    h('form', { class: 'filters', onsubmit: (e: Event) => { e.preventDefault(); submit() } },
      field('From', from), field('To', to), field('Provider', provider), h('button', { type: 'submit' }, 'Show'), presets),
    p.status, charts)

  void getAll<Provider>('/api/admin/providers', {}, { signal: p.signal }).then((ps) => {
    for (const v of ps) provider.append(h('option', { value: v.id, selected: String(v.id) === p.params.get('provider') }, `${v.name} (${v.id})`))
  }).catch(() => {})

  const range = { from: from.value, to: to.value, provider_id: p.params.get('provider') }
  const disposers: (() => void)[] = []
  p.signal.addEventListener('abort', () => disposers.forEach((d) => d()))
  // Each chart is drawn as soon as its answer arrives: the line charts do
  // not wait for the viewing sums, which take longer over a long range.
  const started = performance.now()
  const mark = (name: string) => charts.setAttribute(`data-${name}-ms`, String(Math.round(performance.now() - started)))
  let loading = 3
  let broken = false
  const progress = (bytes: number) => setBusy(p.status, `Loading statistics: ${(bytes / 1e6).toFixed(1)} MB`)
  const done = () => {
    if (--loading > 0 || p.signal.aborted || broken) return
    clearStatus(p.status)
    mark('render')
    charts.setAttribute('data-state', 'ready')
  }
  const failed = (e: unknown) => {
    if (p.signal.aborted) return
    broken = true
    showError(p.status, e)
    charts.setAttribute('data-state', 'error')
  }
  setBusy(p.status, 'Loading statistics')
  const lines = requestText('GET', '/api/stats/subscription' + query(range), undefined, { signal: p.signal, onProgress: progress }).then((text) => {
    mark('fetch')
    subs = JSON.parse(text) as SubscriptionAnswer
    mark('parse')
    const enabled = daily(subs, (t) => t.enabled_count)
    const active = daily(subs, (t) => t.active_count)
    closed.textContent = enabled.days.length ? `closed days ${enabled.days[0]} to ${enabled.days[enabled.days.length - 1]}` : 'no closed day in range'
    disposers.push(lineChart(subsChart, 'Enabled subscribers per tariff', enabled))
    disposers.push(lineChart(activeChart, 'Active accounts per tariff', active))
    mark('lines')
    done()
  })
  const classBars = get<DeviceAnswer>('/api/stats/device' + query(range), { signal: p.signal }).then((dev) => {
    devices = dev
    const classes = byClass(dev)
    barChart(classChart, 'Viewing minutes by device class', classes.map((c) => ({
      label: c.class, parts: [{ name: 'live', value: c.live_minutes }, { name: 'dvr', value: c.dvr_minutes }],
      note: `${c.unique_devices.toLocaleString('en')} devices`,
    })), 'minutes', classes)
    done()
  })
  const channelBars = get<AccountAnswer>('/api/stats/account' + query(range), { signal: p.signal }).then((acc) => {
    channels = topChannels(acc)
    barChart(channelChart, 'Top channels', channels.slice(0, 10).map((c) => ({
      label: c.name || `channel ${c.id}`, parts: [{ name: 'live', value: c.live }, { name: 'dvr', value: c.dvr }],
    })), 'minutes', channels)
    done()
  })
  await Promise.all([lines, classBars, channelBars]).catch(failed)

  function subscriptionsCSV(): string {
    const rows: (string | number)[][] = []
    for (const ps of subs?.provider_stat ?? []) {
      for (const d of ps.subscriptions_stat) {
        for (const t of d.subscriptions) {
          rows.push([ps.provider_id, d.date, t.tariff_id, t.name, t.enabled_count, t.disabled_count, t.active_count, t.enabled_device_count, t.enabled_account_with_devices])
        }
      }
    }
    return csv(['provider_id', 'date', 'tariff_id', 'name', 'enabled_count', 'disabled_count', 'active_count', 'enabled_device_count', 'enabled_account_with_devices'], rows)
  }
  function classesCSV(): string {
    return csv(['class', 'live_minutes', 'dvr_minutes', 'unique_devices'],
      byClass(devices ?? { provider_stat: [] }).map((c) => [c.class, c.live_minutes, c.dvr_minutes, c.unique_devices]))
  }
  function channelsCSV(): string {
    return csv(['channel_id', 'name', 'live_minutes', 'dvr_minutes'], channels.map((c) => [c.id, c.name, c.live, c.dvr]))
  }
}

// daily turns the answer into one series per tariff over the closed days,
// null where a tariff has no row that day.
export function daily(a: SubscriptionAnswer, value: (t: TariffStat) => number): DailyData {
  const days = new Set<string>()
  const names = new Map<number, string>()
  const providerOf = new Map<number, number>()
  const byDay = new Map<string, Map<number, number>>()
  for (const ps of a.provider_stat) {
    for (const d of ps.subscriptions_stat) {
      days.add(d.date)
      let m = byDay.get(d.date)
      if (!m) byDay.set(d.date, (m = new Map()))
      for (const t of d.subscriptions) {
        m.set(t.tariff_id, value(t))
        if (t.name || !names.has(t.tariff_id)) names.set(t.tariff_id, t.name)
        providerOf.set(t.tariff_id, ps.provider_id)
      }
    }
  }
  const sortedDays = [...days].sort()
  const ids = [...names.keys()].sort((x, y) => x - y)
  // Tariffs of several providers may share names: say whose they are.
  const whose = (id: number) => (a.provider_stat.length > 1 ? ` · provider ${providerOf.get(id)}` : '')
  const series: Series[] = ids.map((id) => ({
    id, label: (names.get(id) ? `${names.get(id)} (${id})` : `tariff ${id} (deleted)`) + whose(id),
    values: sortedDays.map((d) => byDay.get(d)?.get(id) ?? null),
  }))
  return { days: sortedDays, series }
}

function byClass(a: DeviceAnswer): DeviceStat[] {
  const m = new Map<string, DeviceStat>()
  for (const ps of a.provider_stat) {
    for (const c of ps.device_stat) {
      const s = m.get(c.class) ?? { class: c.class, live_minutes: 0, dvr_minutes: 0, unique_devices: 0 }
      s.live_minutes += c.live_minutes
      s.dvr_minutes += c.dvr_minutes
      s.unique_devices += c.unique_devices
      m.set(c.class, s)
    }
  }
  return [...m.values()]
}

// topChannels sums the accounts' minutes per channel, most watched first.
function topChannels(a: AccountAnswer): { id: number; name: string; live: number; dvr: number }[] {
  const m = new Map<number, { id: number; name: string; live: number; dvr: number }>()
  for (const ps of a.provider_stat) {
    const names = new Map(ps.channels.map((c) => [c.id, c.name]))
    for (const acc of ps.account_stat) {
      for (const c of acc.channels) {
        const s = m.get(c.channel_id) ?? { id: c.channel_id, name: names.get(c.channel_id) ?? '', live: 0, dvr: 0 }
        s.live += c.live_minutes
        s.dvr += c.dvr_minutes
        m.set(c.channel_id, s)
      }
    }
  }
  return [...m.values()].sort((x, y) => (y.live + y.dvr) - (x.live + x.dvr) || x.id - y.id)
}
