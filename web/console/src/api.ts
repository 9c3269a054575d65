// The console's only way to the server: the public Admin, Provider and
// Statistics APIs. The admin's password is sent once, to sign in (POST
// /api/admin/session), for a session token that every later call sends as
// Authorization: Bearer. The token lives in this module's memory only: not
// in sessionStorage, localStorage or a cookie, so a reload or a new tab
// asks to sign in again.

export interface Credentials { login: string; password: string }
export interface Me { login: string; provider: number | null }
export interface List<T> { data: T[]; total: number; start: number; limit: number }

interface Session { token: string; expires_at: string; login: string; provider: number | null }

// ApiError carries the API's error body: its cause is what the console shows.
export class ApiError extends Error {
  status: number
  code: string
  fields: Record<string, string>
  constructor(status: number, cause: string, code = '', fields: Record<string, string> = {}) {
    super(cause)
    this.status = status
    this.code = code
    this.fields = fields
  }
}

const sessionPath = '/api/admin/session'
// The server sends a fresh token of the session on answers while it is used.
const renewedHeader = 'X-TVSM-Session-Token'

let token: string | null = null
// session counts sign-ins and sign-outs, so that a renewed token arriving
// after the session ended is not taken up.
let session = 0
let me: Me | null = null
let onSignedOut: (why: string) => void = () => {}

// Consoles before session tokens kept the password in the tab's
// sessionStorage: remove what one may have left.
try { sessionStorage.removeItem('tvsm.console.session') } catch { /* storage disabled */ }

export function currentAdmin(): Me | null { return me }
export function whenSignedOut(f: (why: string) => void): void { onSignedOut = f }

function basicHeader(c: Credentials): string {
  const bytes = new TextEncoder().encode(`${c.login}:${c.password}`)
  let bin = ''
  bytes.forEach((b) => { bin += String.fromCharCode(b) })
  return 'Basic ' + btoa(bin)
}

// signIn exchanges the credentials for a session token; the answer tells
// the admin's provider scope. The password is not kept.
export async function signIn(c: Credentials): Promise<Me> {
  const s = await request<Session>('POST', sessionPath, undefined, { basic: c })
  token = s.token
  session++
  me = { login: s.login, provider: s.provider ?? null }
  return me
}

// signOut ends the session: the server revokes its token (on every node),
// and the console forgets it. why, when set, is the API's cause of a 401:
// the token is refused already, so nothing is revoked.
export function signOut(why = ''): void {
  const t = token
  token = null
  session++
  me = null
  if (t && !why) revoke(t)
  onSignedOut(why)
}

// revoke asks the server to sign the session of t out. keepalive lets the
// request finish while the page goes (a reload, a closed tab). Should it
// be lost, the token still expires after 20 minutes without a request.
function revoke(t: string): void {
  fetch(sessionPath, {
    method: 'DELETE', headers: { Authorization: 'Bearer ' + t }, credentials: 'omit', cache: 'no-store', keepalive: true,
  }).catch(() => { /* the token expires by itself */ })
}

// Leaving the page ends its session: a reload signs in again anyway. A page
// the browser brings back from its back-forward cache asks to sign in.
window.addEventListener('pagehide', () => {
  if (token) revoke(token)
  token = null
})
window.addEventListener('pageshow', (e) => {
  if (e.persisted && me && !token) signOut('the session ended when the page was left; sign in again')
})

export interface RequestOptions {
  signal?: AbortSignal
  // onProgress gets the bytes of the answer received so far.
  onProgress?: (bytes: number) => void
  // basic sends these credentials instead of the session's token (the
  // sign-in only).
  basic?: Credentials
  headers?: Record<string, string>
}

// request sends a request and returns the decoded JSON answer, or throws an
// ApiError with the API's cause.
export async function request<T>(method: string, path: string, body?: unknown, o: RequestOptions = {}): Promise<T> {
  const text = await requestText(method, path, body, o)
  return (text === '' ? null : JSON.parse(text)) as T
}

export async function requestText(method: string, path: string, body?: unknown, o: RequestOptions = {}): Promise<string> {
  const auth = o.basic ? basicHeader(o.basic) : token ? 'Bearer ' + token : null
  if (!auth) throw new ApiError(401, 'not signed in')
  const sent = session
  const headers: Record<string, string> = { Accept: 'application/json', Authorization: auth, ...o.headers }
  // The APIs refuse a POST that does not declare JSON, a bodiless one too
  // (the erasure, the sign-in): a page of another site cannot send it with
  // credentials.
  if (body !== undefined || (method !== 'GET' && method !== 'HEAD')) headers['Content-Type'] = 'application/json'
  let res: Response
  try {
    // credentials: 'omit' keeps the browser from its own Basic prompt on a
    // 401: the console asks for the password itself.
    res = await fetch(path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'omit', cache: 'no-store', signal: o.signal,
    })
  } catch (e) {
    if ((e as Error).name === 'AbortError') throw e
    throw new ApiError(0, 'the server cannot be reached: ' + (e as Error).message)
  }
  const renewed = res.headers.get(renewedHeader)
  if (renewed && !o.basic && sent === session && token) token = renewed
  const text = await readBody(res, o.onProgress)
  if (!res.ok) {
    let cause = `${res.status} ${res.statusText}`
    let code = ''
    let fields: Record<string, string> = {}
    try {
      const e = JSON.parse(text)
      cause = e.cause || cause
      code = e.error || ''
      fields = e.fields || {}
    } catch { /* not the API's error body */ }
    if (res.status === 401 && !o.basic && sent === session) signOut(cause)
    throw new ApiError(res.status, cause, code, fields)
  }
  return text
}

async function readBody(res: Response, onProgress?: (bytes: number) => void): Promise<string> {
  if (!onProgress || !res.body) return res.text()
  const reader = res.body.getReader()
  const decoder = new TextDecoder()
  const parts: string[] = []
  let bytes = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    bytes += value.byteLength
    parts.push(decoder.decode(value, { stream: true }))
    onProgress(bytes)
  }
  parts.push(decoder.decode())
  return parts.join('')
}

// query builds "?a=1&b=x" from the set values of params.
export function query(params: Record<string, string | number | boolean | null | undefined>): string {
  const u = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) {
    if (v !== null && v !== undefined && v !== '') u.set(k, String(v))
  }
  const s = u.toString()
  return s ? '?' + s : ''
}

export const get = <T>(path: string, o?: RequestOptions) => request<T>('GET', path, undefined, o)

// getAll reads every page of a list (the catalog lists are short; accounts
// are never read whole).
export async function getAll<T>(path: string, params: Record<string, string | number | boolean | null | undefined> = {}, o?: RequestOptions): Promise<T[]> {
  const out: T[] = []
  for (let start = 0; ; start += 1000) {
    const page = await get<List<T>>(path + query({ ...params, start, limit: 1000 }), o)
    out.push(...page.data)
    if (page.data.length === 0 || out.length >= page.total) return out
  }
}
