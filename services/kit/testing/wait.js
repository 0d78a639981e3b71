// Waiting for something to become true, for the tests and the cluster e2e alike.
import { setTimeout as sleep } from 'node:timers/promises'

/**
 * Calls `check()` every `everyMs` until it resolves to a truthy value, and resolves to that value. A
 * throw counts as "not yet" (the last one is named if it never becomes true). Fails naming `what`
 * after `timeoutMs`.
 */
export async function waitFor (what, check, { timeoutMs = 30_000, everyMs = 50 } = {}) {
  const deadline = Date.now() + timeoutMs
  let last
  while (Date.now() < deadline) {
    try {
      const v = await check()
      if (v) return v
    } catch (err) { last = err }
    await sleep(everyMs)
  }
  const seconds = Math.round(timeoutMs / 100) / 10
  throw new Error(`${what}: not within ${seconds} s${last ? ` (${last.message})` : ''}`)
}
