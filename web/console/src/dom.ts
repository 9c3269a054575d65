// A small hyperscript helper: h('a', {href: '#/x', onclick: f}, 'text').
// Attributes starting with "on" become listeners, class and style are
// strings, false/null/undefined attributes and children are left out.

export type Child = Node | string | number | null | undefined | false | Child[]
export type Attrs = Record<string, unknown>

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs?: Attrs | null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === false || v === null || v === undefined) continue
    if (k.startsWith('on') && typeof v === 'function') {
      el.addEventListener(k.slice(2), v as EventListener)
    } else if (k === 'value' && (el instanceof HTMLInputElement || el instanceof HTMLSelectElement || el instanceof HTMLTextAreaElement)) {
      el.value = String(v)
    } else if (k === 'checked' && el instanceof HTMLInputElement) {
      el.checked = Boolean(v)
    } else {
      el.setAttribute(k, v === true ? '' : String(v))
    }
  }
  append(el, children)
  return el
}

export function append(el: Node, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue
    if (Array.isArray(c)) append(el, c)
    else el.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)))
  }
}

// replace puts children in el instead of what it held.
export function replace(el: Element, ...children: Child[]): void {
  el.replaceChildren()
  append(el, children)
}

// fmtTime writes an API date-time (2026-05-04T10:00:00+0000) or Unix
// seconds as local "2026-05-04 10:00:00"; empty for null.
export function fmtTime(v: string | number | null | undefined): string {
  if (v === null || v === undefined || v === '') return ''
  const d = typeof v === 'number' ? new Date(v * 1000) : new Date(v.replace(/([+-]\d\d)(\d\d)$/, '$1:$2'))
  if (Number.isNaN(d.getTime())) return String(v)
  const p = (n: number) => String(n).padStart(2, '0')
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`
}

// ago says how long ago a time was, briefly ("5 min ago").
export function ago(v: string | number | null | undefined, now = Date.now()): string {
  if (v === null || v === undefined || v === '') return 'never'
  const t = typeof v === 'number' ? v * 1000 : Date.parse(String(v).replace(/([+-]\d\d)(\d\d)$/, '$1:$2'))
  if (Number.isNaN(t)) return ''
  const s = Math.max(0, Math.round((now - t) / 1000))
  if (s < 60) return `${s} s ago`
  if (s < 3600) return `${Math.round(s / 60)} min ago`
  if (s < 86400) return `${Math.round(s / 3600)} h ago`
  return `${Math.round(s / 86400)} days ago`
}

// field is a labelled form control.
export function field(label: string, control: HTMLElement, hint?: string): HTMLElement {
  if (!control.id) control.id = 'f-' + Math.random().toString(36).slice(2, 9)
  return h('div', { class: 'field' },
    h('label', { for: control.id }, label),
    control,
    hint ? h('small', { class: 'hint' }, hint) : null)
}

// table builds a table; rows are arrays of cells.
export function table(caption: string, head: string[], rows: Child[][], cls = ''): HTMLElement {
  return h('div', { class: 'table-wrap ' + cls },
    h('table', null,
      h('caption', { class: 'sr-only' }, caption),
      h('thead', null, h('tr', null, head.map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', null, rows.map((r) => h('tr', null, r.map((c) => h('td', null, c)))))))
}

export function yesNo(b: boolean): string { return b ? 'yes' : 'no' }
