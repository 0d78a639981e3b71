// The traffic shapes, as pure functions of a random source: scenarios.js draws with them (the k6
// scripts pass Math.random); node:test calls them with a seeded generator and checks the proportions.

/** "1-2000" → [1, 2000]. */
export function range (text) {
  const m = /^\s*(\d+)\s*-\s*(\d+)\s*$/.exec(String(text))
  if (!m || +m[1] > +m[2]) throw new Error(`not a range lo-hi: ${text}`)
  return [+m[1], +m[2]]
}

/** "list:2,product:3" → [['list', 2], ['product', 3]]. */
export function weights (text) {
  return String(text).split(',').map((part) => {
    const [key, w] = part.split(':')
    if (!key || !(Number(w) >= 0)) throw new Error(`not a weight list name:weight,…: ${text}`)
    return [key.trim(), Number(w)]
  })
}

/** A key of `entries` ([[key, weight], …]) with probability proportional to its weight. */
export function weighted (rand, entries) {
  const total = entries.reduce((s, [, w]) => s + w, 0)
  let x = rand() * total
  for (const [key, w] of entries) {
    if (x < w) return key
    x -= w
  }
  return entries[entries.length - 1][0]
}

/** An integer in [lo, hi], uniform. */
export const uniform = (rand, lo, hi) => lo + Math.floor(rand() * (hi - lo + 1))

/** `n` ids spread evenly over [lo, hi]: a hot set that does not sit on the first rows only. */
export function spread (lo, hi, n) {
  const size = hi - lo + 1
  const count = Math.min(n, size)
  return Array.from({ length: count }, (_, i) => lo + Math.floor((i + 0.5) * size / count))
}

/** With probability `share` one of `hot`, otherwise uniform over [lo, hi] (the profile seed: 75% on 20 ids). */
export function hotOrUniform (rand, { hot, share, lo, hi }) {
  return hot.length && rand() < share ? hot[Math.floor(rand() * hot.length)] : uniform(rand, lo, hi)
}

/**
 * A page number in 1…pages: the journal's mix — a share `tail` (10%) of requests on the last
 * `tailPages` fraction (10%) of the pages, where OFFSET paging hurts most; the rest uniform.
 */
export function page (rand, pages, { tail = 0.1, tailPages = 0.1 } = {}) {
  const firstTail = Math.max(1, pages - Math.max(1, Math.floor(pages * tailPages)) + 1)
  return rand() < tail ? uniform(rand, firstTail, pages) : uniform(rand, 1, pages)
}
