// Charts: uPlot line charts of daily series, and bar charts drawn as HTML
// (a few categories, readable by screen readers as they are). Every chart
// keeps the numbers it was drawn from on its element (chartData), which is
// also what its CSV holds.
import uPlot from 'uplot'
import 'uplot/dist/uPlot.min.css'
import { h } from './dom'

export interface Series { id: number | string; label: string; values: (number | null)[] }
export interface DailyData { days: string[]; series: Series[] }

export type ChartElement = HTMLElement & { chartData?: unknown }

// color gives series i a hue of its own, spread by the golden angle.
export function color(i: number): string {
  return `hsl(${Math.round((i * 137.508) % 360)} 65% 42%)`
}

function dayToSeconds(d: string): number {
  return Date.UTC(Number(d.slice(0, 4)), Number(d.slice(5, 7)) - 1, Number(d.slice(8, 10))) / 1000
}

// lineChart draws data into el (whose height is set by CSS, so the page does
// not move when the chart arrives) and returns a function that disposes it.
export function lineChart(el: ChartElement, title: string, data: DailyData): () => void {
  el.replaceChildren()
  el.chartData = data
  el.setAttribute('role', 'img')
  el.setAttribute('aria-label', `${title}: ${data.series.length} series over ${data.days.length} days`)
  if (data.days.length === 0) {
    el.append(h('p', { class: 'empty' }, 'No closed days in this range.'))
    return () => {}
  }
  const x = data.days.map(dayToSeconds)
  const opts: uPlot.Options = {
    width: Math.max(280, el.clientWidth),
    height: Math.max(200, el.clientHeight - 105),
    tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
    cursor: { drag: { x: true, y: false } },
    legend: { show: true, live: true },
    scales: { x: { time: true }, y: { range: (_u, min, max) => [0, Math.max(1, max * 1.05 || 1)] as uPlot.Range.MinMax } },
    // Days, never hours: ticks on whole days, weeks, months or years.
    axes: [{
      space: 60,
      incrs: [1, 2, 7, 14, 30, 61, 91, 182, 365, 730].map((d) => d * 86400),
      values: (_u, splits, _ai, _space, incr) => splits.map((v) =>
        uPlot.fmtDate(incr >= 365 * 86400 ? '{YYYY}' : incr >= 28 * 86400 ? '{MMM} {YYYY}' : '{MMM} {D}')(uPlot.tzDate(new Date(v * 1000), 'Etc/UTC'))),
    }, { size: 56, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 2e6, 5e6] }],
    series: [
      { label: 'Day', value: (_u, v) => (v === null || v === undefined ? '—' : uPlot.fmtDate('{YYYY}-{MM}-{DD}')(uPlot.tzDate(new Date(v * 1000), 'Etc/UTC'))) },
      ...data.series.map((s, i) => ({ label: s.label, stroke: color(i), width: 1.5, points: { show: data.days.length <= 62 }, spanGaps: false })),
    ],
  }
  const plot = new uPlot(opts, [x, ...data.series.map((s) => s.values)] as uPlot.AlignedData, el)
  const ro = new ResizeObserver(() => plot.setSize({ width: Math.max(280, el.clientWidth), height: opts.height! }))
  ro.observe(el)
  return () => { ro.disconnect(); plot.destroy() }
}

export interface Bar { label: string; parts: { name: string; value: number }[]; note?: string }

// barChart draws horizontal stacked bars as a table: one row per bar.
export function barChart(el: ChartElement, title: string, bars: Bar[], unit: string, data: unknown): void {
  el.replaceChildren()
  el.chartData = data
  if (bars.length === 0) {
    el.append(h('p', { class: 'empty' }, 'Nothing in this range.'))
    return
  }
  const max = Math.max(1, ...bars.map((b) => b.parts.reduce((s, p) => s + p.value, 0)))
  const names = bars[0].parts.map((p) => p.name)
  el.append(h('table', { class: 'bars' },
    h('caption', { class: 'sr-only' }, title),
    h('thead', null, h('tr', null, h('th', { scope: 'col' }, ''), h('th', { scope: 'col' },
      names.map((n, i) => h('span', { class: 'key' }, h('i', { style: `background:${color(i * 3)}` }), n)), ` (${unit})`))),
    h('tbody', null, bars.map((b) => {
      const total = b.parts.reduce((s, p) => s + p.value, 0)
      return h('tr', null, h('th', { scope: 'row' }, b.label),
        h('td', null,
          h('div', { class: 'bar', 'aria-hidden': 'true' }, b.parts.map((p, i) =>
            h('span', { style: `width:${(100 * p.value) / max}%;background:${color(i * 3)}`, title: `${p.name}: ${p.value.toLocaleString('en')}` }))),
          h('span', { class: 'bar-value' }, b.parts.map((p) => `${p.name} ${p.value.toLocaleString('en')}`).join(' · '),
            ` = ${total.toLocaleString('en')}`, b.note ? ` · ${b.note}` : '')))
    }))))
}

// csv writes rows as RFC 4180 CSV.
export function csv(head: string[], rows: (string | number)[][]): string {
  const cell = (v: string | number) => {
    const s = String(v)
    return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s
  }
  return [head, ...rows].map((r) => r.map(cell).join(',')).join('\r\n') + '\r\n'
}

// download offers text as a file.
export function download(name: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: 'text/csv;charset=utf-8' }))
  const a = h('a', { href: url, download: name, hidden: true })
  document.body.append(a)
  a.click()
  a.remove()
  setTimeout(() => URL.revokeObjectURL(url), 10000)
}
