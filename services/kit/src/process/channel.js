// Requests between the main thread and a worker thread, over their MessagePort, in both directions:
// each side answers the other's requests with its `handlers` and sends its own with request(). The
// worker asks for a scrape of the whole process and relays a cache invalidation; the main thread asks
// every worker for its metrics, passes invalidations on, and tells it to shut down.

/** Resolved by request() when the other side did not answer within its timeout. */
export const NO_ANSWER = Symbol('no answer')

/**
 * @param {import('node:worker_threads').MessagePort | import('node:worker_threads').Worker} port
 * @param {Record<string, (args: object) => unknown>} handlers  what the other side may ask of this one
 */
export function channel (port, handlers) {
  const pending = new Map() // id -> resolve
  let seq = 0
  port.on('message', async (msg) => {
    if (msg.answer) {
      pending.get(msg.id)?.(msg.result)
      pending.delete(msg.id)
    } else {
      port.postMessage({ answer: true, id: msg.id, result: await handlers[msg.op](msg.args) })
    }
  })
  return {
    /** Resolves to the other side's answer, or NO_ANSWER after `timeoutMs` (none: it waits). */
    request (op, args = {}, timeoutMs = 0) {
      const id = ++seq
      return new Promise((resolve) => {
        let timer
        pending.set(id, (result) => { clearTimeout(timer); resolve(result) })
        if (timeoutMs) timer = setTimeout(() => { pending.delete(id); resolve(NO_ANSWER) }, timeoutMs)
        port.postMessage({ id, op, args })
      })
    }
  }
}
