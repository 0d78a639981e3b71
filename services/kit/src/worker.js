// One worker thread: runs an instance of the service (instance.js) and carries the messages between
// it and the main thread (workers.js).
import { parentPort, workerData } from 'node:worker_threads'
import { createInstance } from './instance.js'

const { serviceUrl, ...deps } = workerData
// Imported by URL, not statically: this thread runs whichever service started it, and its routes are
// code, which cannot be sent to a thread.
const service = (await import(serviceUrl)).default

// Requests to the main thread (see `calls` in workers.js), answered by { type: 'reply', id, result }.
const pending = new Map()
let callSeq = 0
function call (op, args = {}) {
  const callId = ++callSeq
  return new Promise((resolve) => {
    pending.set(callId, resolve)
    parentPort.postMessage({ type: 'call', id: callId, op, ...args })
  })
}

const instance = await createInstance({ ...deps, service, call })

parentPort.on('message', async (msg) => {
  if (msg.type === 'reply') {
    pending.get(msg.id)?.(msg.result)
    pending.delete(msg.id)
  } else if (msg.type === 'ask') {
    parentPort.postMessage({ type: 'answer', id: msg.id, result: await instance.answers[msg.op](msg) })
  } else if (msg.type === 'shutdown') {
    process.exit(await instance.shutdown()) // ends this thread only; 1: requests were cut
  }
})

parentPort.postMessage({ type: 'listening', address: await instance.listen() })
