// Closing an HTTP server at shutdown without resetting a client. http.Server#close destroys every idle
// keep-alive connection at once, and a client that is sending its next request on one at that instant
// gets a reset; closing the listening socket resets the connections still waiting in its accept queue.
// Instead each connection ends on its own terms: a request in progress is answered with
// `Connection: close` (request-id.js sets it while draining) and Node closes the connection after that answer;
// a connection is closed by the server only once it has been idle for `idleMs` (SHUTDOWN_IDLE_MS) since
// the drain began, when a client is unlikely to be writing on it (by then it has had answers with
// `Connection: close` on its other connections and stopped sending here). And the port keeps accepting
// until no new connection has come for `idleMs` (a load balancer takes a moment to stop sending new
// ones): closed while clients still connect, it would refuse or reset them. A client that reconnects
// after every `Connection: close` would keep it open for ever: it closes DRAIN_ACCEPT_MAX_MS after the
// drain began at the latest. Where the clients never stop sending here (the dev loop restarts the
// process inside a pod that stays their endpoint), waiting for them only delays the restart: idleMs 0.
import { Server } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'

const DRAIN_ACCEPT_MAX_MS = 5000

const CONNECTION = Symbol('connection') // on a response: its connection's { busy, idleSince }
function requestClosed () {
  const s = this[CONNECTION]
  s.busy--
  s.idleSince = performance.now()
}

/** Follows `server`'s connections from now on (call it before listening); returns { drain }. */
export function trackConnections (server) {
  const sockets = new Map() // socket -> { busy: requests in progress, idleSince }
  let lastConnection = 0
  server.on('connection', (socket) => {
    lastConnection = performance.now()
    sockets.set(socket, { busy: 0, idleSince: lastConnection })
    socket.once('close', () => sockets.delete(socket))
  })
  server.on('request', (req, res) => {
    const s = sockets.get(req.socket)
    if (!s) return
    s.busy++
    res[CONNECTION] = s
    res.on('close', requestClosed) // one shared listener, not a closure and a once() wrapper per request
  })

  /**
   * Waits until every connection has ended and no new one has come for `idleMs` (or
   * DRAIN_ACCEPT_MAX_MS have passed), then stops listening; meanwhile closes the connections idle for
   * `idleMs` (counted from now at the earliest). After `timeoutMs` the port is closed and the
   * connections left are destroyed: resolves to their count.
   */
  async function drain (timeoutMs, idleMs) {
    const began = performance.now()
    const deadline = began + timeoutMs
    let listening = true
    const stopListening = () => { // the listening socket only: see above
      if (listening) Server.prototype.close.call(server)
      listening = false
    }
    for (let now = began; now < deadline; now = performance.now()) {
      for (const [socket, s] of sockets) {
        if (s.busy === 0 && now - Math.max(s.idleSince, began) >= idleMs) socket.destroy()
      }
      if (now - Math.max(lastConnection, began) >= idleMs || now - began >= DRAIN_ACCEPT_MAX_MS) stopListening()
      if (!listening && !sockets.size) return 0
      await sleep(50)
    }
    stopListening()
    const cut = sockets.size
    for (const socket of sockets.keys()) socket.destroy()
    return cut
  }
  return { drain }
}
