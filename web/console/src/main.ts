import './style.css'
import { currentAdmin, signIn, signOut, whenSignedOut, ApiError } from './api'
import { h, replace, field } from './dom'
import { newPage, go, heading, showError, setBusy } from './app'
import { providersPage } from './pages/providers'
import { tariffsPage, channelsPage } from './pages/catalog'
import { accountsPage } from './pages/accounts'
import { accountPage } from './pages/account'
import { sendPage, receiptsPage } from './pages/commands'
import { statsPage } from './pages/stats'

type Render = (page: ReturnType<typeof newPage>, id?: string) => void | Promise<void>

const routes: [RegExp, Render, string][] = [
  [/^providers$/, providersPage, 'providers'],
  [/^tariffs$/, tariffsPage, 'tariffs'],
  [/^channels$/, channelsPage, 'channels'],
  [/^accounts$/, accountsPage, 'accounts'],
  [/^accounts\/(\d+)$/, (p, id) => accountPage(p, Number(id)), 'accounts'],
  [/^commands$/, sendPage, 'commands'],
  [/^commands\/(\d+)$/, (p, id) => receiptsPage(p, Number(id)), 'commands'],
  [/^stats$/, statsPage, 'stats'],
]

const nav: [string, string][] = [
  ['accounts', 'Accounts'], ['providers', 'Providers'], ['tariffs', 'Tariffs'],
  ['channels', 'Channels'], ['commands', 'Commands'], ['stats', 'Statistics'],
]

const app = document.getElementById('app')!
let leave = new AbortController()

function layout(active: string): HTMLElement {
  const a = currentAdmin()!
  const main = h('main', { id: 'main', tabindex: '-1' })
  replace(app,
    h('header', { class: 'top' },
      h('a', { class: 'brand', href: '#/accounts' }, 'tvsm'),
      h('nav', { 'aria-label': 'Sections' },
        h('ul', null, nav.map(([r, label]) => h('li', null,
          h('a', { href: '#/' + r, 'aria-current': r === active ? 'page' : false }, label))))),
      h('div', { class: 'who' },
        h('span', { title: a.provider === null ? 'superadmin' : `admin of provider ${a.provider}` },
          a.login, a.provider === null ? ' (superadmin)' : ` (provider ${a.provider})`),
        h('button', { type: 'button', class: 'link', onclick: () => signOut() }, 'Sign out'))),
    main)
  return main
}

function signInPage(why = ''): void {
  leave.abort()
  const login = h('input', { name: 'login', autocomplete: 'username', required: true, autofocus: true })
  const password = h('input', { name: 'password', type: 'password', autocomplete: 'current-password', required: true })
  const status = h('div', { class: 'status', role: 'status', 'aria-live': 'polite' })
  const button = h('button', { type: 'submit' }, 'Sign in')
  const form = h('form', {
    class: 'signin', 'aria-labelledby': 'signin-title',
    onsubmit: async (ev: Event) => {
      ev.preventDefault()
      button.disabled = true
      setBusy(status, 'Signing in')
      try {
        await signIn({ login: login.value.trim(), password: password.value })
        if (!location.hash || location.hash === '#/' || location.hash === '#/signin') location.hash = '#/accounts'
        else route()
      } catch (e) {
        showError(status, e instanceof ApiError && e.status === 401 ? new ApiError(401, 'wrong login or password', 'unauthorized') : e)
        button.disabled = false
        password.select()
      }
    },
  },
  h('h1', { id: 'signin-title' }, 'tvsm console'),
  h('p', null, 'Sign in with your Admin API login.'),
  field('Login', login), field('Password', password), button, status)
  if (why) showError(status, new ApiError(401, why))
  replace(app, h('main', { id: 'main', class: 'signin-wrap' }, form))
  login.focus()
}

function route(): void {
  if (!currentAdmin()) { signInPage(); return }
  const [path, qs] = location.hash.replace(/^#\/?/, '').split('?')
  for (const [re, render, section] of routes) {
    const m = re.exec(path)
    if (!m) continue
    leave.abort()
    leave = new AbortController()
    const main = layout(section)
    const page = newPage(main, new URLSearchParams(qs || ''), leave.signal)
    void Promise.resolve(render(page, m[1])).catch((e) => showError(page.status, e))
    ;(main.querySelector('h1') as HTMLElement | null)?.focus({ preventScroll: true })
    return
  }
  if (path === '' || path === 'signin') { go('#/accounts'); return }
  leave.abort()
  const main = layout('')
  main.append(heading('Not found'), h('p', null, 'No page at ', h('code', null, location.hash), '.'))
}

whenSignedOut((why) => { if (why) signInPage(why); else { history.replaceState(null, '', '#/'); signInPage() } })
window.addEventListener('hashchange', route)
document.querySelector('.skip')?.addEventListener('click', (e) => {
  e.preventDefault()
  document.getElementById('main')?.focus()
})
route()
