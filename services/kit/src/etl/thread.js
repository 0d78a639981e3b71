// What a capped thread (cli/data-commands.js, inCappedThread) sends back: `{ result }`, or `{ failed }` saying why,
// and whether that reason is a sentence for the operator (a refused load, a database that said no)
// rather than a bug, whose stack matters.
import { parentPort } from 'node:worker_threads'
import { LoadRefused } from './load.js'
import { isUnavailable } from '../data/connection.js'

/** Runs `work` and posts its result, or its failure (the thread then exits 1). */
export async function runInThread (work) {
  try {
    parentPort.postMessage({ result: await work() })
  } catch (err) {
    // severity: PostgreSQL's own error
    const sentence = err instanceof LoadRefused || err.severity !== undefined || isUnavailable(err)
    parentPort.postMessage({ failed: { message: err.message, stack: err.stack, sentence } })
    process.exitCode = 1
  }
}
