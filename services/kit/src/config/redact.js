// Secrets out of what is printed: the userinfo of a URL (`postgres://user:password@host`, also a
// mistyped `postgresql//user:password@host`) and a bare `user:password@host` become `***@host`.
// Applied to config errors, to every log line and to npm start's output.

const URL_USERINFO = /\/\/[^/\s]*@/g // up to the last @ before the path: a password may hold one
const BARE_USERINFO = /[^\s/:@'"=]+:[^\s/@'"]+@/g

/** `text` with every userinfo replaced by `***`. */
export function redact (text) {
  return String(text).replace(URL_USERINFO, '//***@').replace(BARE_USERINFO, '***@')
}

/** Settings never shown, not even redacted. */
export const isSecretName = (name) => /PASSWORD|SECRET|TOKEN|CREDENTIAL/i.test(name)
