// Closing an HTTP server at shutdown without resetting a client. http.Server#close destroys every idle
// keep-alive connection at once, and a client that is sending its next request on one at that instant
// gets a reset. Instead the port stops accepting, and each open connection ends on its own terms: a
// request in progress is answered with `Connection: close` (app.js sets it while draining) and Node
// closes the connection after that answer; a connection is closed by the server only once it has been
// idle for DRAIN_IDLE_MS, when a client is unlikely to be writing on it.
import { Server } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'

export const DRAIN_IDLE_MS = 1000

/** Follows `server`'s connections from now on (call it before listening); returns { drain }. */
export function trackConnections (server) {
  const sockets = new Map() // socket -> { busy: requests in progress, idleSince }
  server.on('connection', (socket) => {
    sockets.set(socket, { busy: 0, idleSince: performance.now() })
    socket.once('close', () => sockets.delete(socket))
  })
  server.on('request', (req, res) => {
    const s = sockets.get(req.socket)
    if (!s) return
    s.busy++
    res.once('close', () => { s.busy--; s.idleSince = performance.now() })
  })

  /**
   * Stops accepting connections, then waits until every connection has ended, closing those idle for
   * DRAIN_IDLE_MS; after `timeoutMs` the rest are destroyed. Resolves to the count destroyed that way.
   */
  async function drain (timeoutMs) {
    Server.prototype.close.call(server) // the listening socket only: see above
    const deadline = performance.now() + timeoutMs
    while (sockets.size && performance.now() < deadline) {
      const now = performance.now()
      for (const [socket, s] of sockets) if (s.busy === 0 && now - s.idleSince >= DRAIN_IDLE_MS) socket.destroy()
      await sleep(50)
    }
    const cut = sockets.size
    for (const socket of sockets.keys()) socket.destroy()
    return cut
  }
  return { drain }
}
