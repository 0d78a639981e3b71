// The launcher as `npm start` runs it: node with the flags package.json's "start" script gives it
// (the launcher's own young generation), so bench:start and the tests measure and stop that process.
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('../..', import.meta.url))

/** [node, ...flags, /abs/scripts/start.js] */
export function launcherCommand () {
  const [node, ...args] = JSON.parse(readFileSync(`${root}package.json`, 'utf8')).scripts.start.split(/\s+/)
  if (node !== 'node' || args.at(-1) !== 'scripts/start.js') {
    throw new Error(`package.json's start script is not "node [flags] scripts/start.js": ${node} ${args.join(' ')}`)
  }
  return [process.execPath, ...args.slice(0, -1), `${root}scripts/start.js`]
}
