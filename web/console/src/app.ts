// What every page shares: its element, an abort signal that fires when the
// admin navigates away, timers that stop then, and the way errors and
// progress are shown.
import { ApiError } from './api'
import { h, replace } from './dom'

export interface Page {
  root: HTMLElement
  signal: AbortSignal
  params: URLSearchParams
  // every runs f now and then every ms until the page is left.
  every(ms: number, f: () => Promise<void> | void): void
  // guard runs f, showing progress in the status line and the API's cause
  // on failure; it returns f's value or undefined.
  guard<T>(what: string, f: () => Promise<T>): Promise<T | undefined>
  status: HTMLElement
}

export function newPage(root: HTMLElement, params: URLSearchParams, signal: AbortSignal): Page {
  const status = h('div', { class: 'status', role: 'status', 'aria-live': 'polite' })
  const timers: number[] = []
  signal.addEventListener('abort', () => timers.forEach((t) => clearTimeout(t)))
  const page: Page = {
    root, signal, params, status,
    every(ms, f) {
      const tick = async () => {
        if (signal.aborted) return
        try { await f() } catch (e) { if (!signal.aborted) showError(status, e) }
        if (!signal.aborted) timers.push(window.setTimeout(tick, ms))
      }
      void tick()
    },
    async guard(what, f) {
      setBusy(status, what)
      try {
        const v = await f()
        if (!signal.aborted) clearStatus(status)
        return v
      } catch (e) {
        if (!signal.aborted) showError(status, e)
        return undefined
      }
    },
  }
  return page
}

export function setBusy(status: HTMLElement, what: string, fraction?: number): void {
  status.className = 'status busy'
  replace(status,
    h('progress', fraction === undefined ? { 'aria-label': what } : { max: 1, value: fraction, 'aria-label': what }),
    h('span', null, what + '…'))
}

export function clearStatus(status: HTMLElement): void {
  status.className = 'status'
  replace(status)
}

export function showError(status: HTMLElement, e: unknown): void {
  if ((e as Error)?.name === 'AbortError') return
  status.className = 'status error'
  const msg = e instanceof ApiError ? e.message : String((e as Error)?.message ?? e)
  const code = e instanceof ApiError && e.status ? ` (${e.status}${e.code ? ' ' + e.code : ''})` : ''
  replace(status, h('span', { role: 'alert' }, h('strong', null, 'Error: '), msg + code))
}

// heading is a page's h1, focused when the page opens so that keyboard and
// screen reader users land on it.
export function heading(text: string, ...extra: Node[]): HTMLElement {
  return h('div', { class: 'page-head' }, h('h1', { tabindex: '-1' }, text), ...extra)
}

// go navigates to a console route.
export function go(route: string): void {
  if (location.hash === route) window.dispatchEvent(new HashChangeEvent('hashchange'))
  else location.hash = route
}

// editor fills box with a form titled title holding fields, whose submit
// runs save (progress and the API's cause shown on the page) and, when it
// succeeded, closes the form and runs then.
export function editor(p: Page, box: HTMLElement, title: string, submit: string, fields: Node[],
  save: () => Promise<unknown>, then: () => Promise<void>): void {
  const button = h('button', { type: 'submit' }, submit)
  replace(box, h('form', {
    onsubmit: async (ev: Event) => {
      ev.preventDefault()
      button.disabled = true
      const ok = await p.guard('Saving', save)
      button.disabled = false
      if (ok !== undefined) { box.hidden = true; await then() }
    },
  },
  h('h2', null, title),
  h('div', { class: 'grid' }, ...fields),
  h('div', { class: 'actions' }, button, h('button', { type: 'button', class: 'secondary', onclick: () => { box.hidden = true } }, 'Cancel'))))
  box.hidden = false
  ;(box.querySelector('input, select, textarea') as HTMLElement | null)?.focus()
}
