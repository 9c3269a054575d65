// The console's only way to the server: the public Admin, Provider and
// Statistics APIs, with the admin's Basic credentials on every request.

export interface Credentials { login: string; password: string }
export interface Me { login: string; provider: number | null }
export interface List<T> { data: T[]; total: number; start: number; limit: number }

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

const storageKey = 'tvsm.console.session'
let creds: Credentials | null = null
let me: Me | null = null
let onSignedOut: (why: string) => void = () => {}

// Credentials live in the tab's sessionStorage: a reload keeps the session,
// closing the tab ends it.
try {
  const saved = JSON.parse(sessionStorage.getItem(storageKey) || 'null')
  if (saved && saved.creds && saved.me) { creds = saved.creds; me = saved.me }
} catch { /* a damaged session is no session */ }

export function currentAdmin(): Me | null { return me }
export function whenSignedOut(f: (why: string) => void): void { onSignedOut = f }

function authHeader(c: Credentials): string {
  const bytes = new TextEncoder().encode(`${c.login}:${c.password}`)
  let bin = ''
  bytes.forEach((b) => { bin += String.fromCharCode(b) })
  return 'Basic ' + btoa(bin)
}

// signIn checks the credentials by reading the admin itself, which every
// admin may, and learns its provider scope.
export async function signIn(c: Credentials): Promise<Me> {
  const a = await request<Me>('GET', `/api/admin/admins/${encodeURIComponent(c.login)}`, undefined, { creds: c })
  creds = c
  me = { login: a.login, provider: a.provider ?? null }
  sessionStorage.setItem(storageKey, JSON.stringify({ creds, me }))
  return me
}

export function signOut(why = ''): void {
  creds = null
  me = null
  sessionStorage.removeItem(storageKey)
  onSignedOut(why)
}

export interface RequestOptions {
  signal?: AbortSignal
  // onProgress gets the bytes of the answer received so far.
  onProgress?: (bytes: number) => void
  creds?: Credentials
  headers?: Record<string, string>
}

// request sends a request and returns the decoded JSON answer, or throws an
// ApiError with the API's cause.
export async function request<T>(method: string, path: string, body?: unknown, o: RequestOptions = {}): Promise<T> {
  const text = await requestText(method, path, body, o)
  return (text === '' ? null : JSON.parse(text)) as T
}

export async function requestText(method: string, path: string, body?: unknown, o: RequestOptions = {}): Promise<string> {
  const c = o.creds ?? creds
  if (!c) throw new ApiError(401, 'not signed in')
  const headers: Record<string, string> = { Accept: 'application/json', Authorization: authHeader(c), ...o.headers }
  // The APIs refuse a POST that does not declare JSON, a bodiless one too
  // (the erasure): a page of another site cannot send it with credentials.
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
    if (res.status === 401 && !o.creds) signOut(cause)
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
