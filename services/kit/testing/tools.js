// Where the programs the tests, benchmarks and load tests run come from: the machine's packages
// (PostgreSQL, Redis, nginx, Prometheus) and the pinned Go tools that scripts/tools.sh builds into the
// tools folder. The one place that knows both; scripts/provision.js installs what is missing.
import { existsSync, readdirSync } from 'node:fs'
import { homedir } from 'node:os'
import { delimiter, join } from 'node:path'

/**
 * The tools folder, outside any clone so that every clone and CI run reuses it: $SUITE_TOOLS or
 * ~/.cache/suite-tools.
 */
export const toolsDir = () => process.env.SUITE_TOOLS || join(homedir(), '.cache', 'suite-tools')

/** Where scripts/tools.sh puts the Go tools. */
export const goBinDir = () => join(toolsDir(), 'go-bin')

// Each program and the Debian package that has it; a program not listed is one of the Go tools.
export const PACKAGES = {
  initdb: 'postgresql',
  postgres: 'postgresql',
  pg_basebackup: 'postgresql',
  'redis-server': 'redis-server',
  nginx: 'nginx',
  prometheus: 'prometheus',
  promtool: 'prometheus',
  alertmanager: 'prometheus-alertmanager'
}

// Debian keeps PostgreSQL's server programs under /usr/lib/postgresql/<major>/bin and nginx in
// /usr/sbin, which a user's PATH may lack.
function searchPath () {
  const dirs = [
    ...(process.env.PATH ?? '').split(delimiter).filter(Boolean), '/usr/sbin', '/usr/local/go/bin', goBinDir()
  ]
  if (existsSync('/usr/lib/postgresql')) {
    for (const v of readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a))) {
      dirs.push(`/usr/lib/postgresql/${v}/bin`)
    }
  }
  return dirs
}

/** The path of program `name`, or null. */
export function whichBinary (name) {
  for (const dir of searchPath()) {
    const file = join(dir, name)
    if (existsSync(file)) return file
  }
  return null
}

/** The path of program `name`; throws naming what provides it and the command that installs it. */
export function findBinary (name) {
  const found = whichBinary(name)
  if (found) return found
  const from = PACKAGES[name] ? `the ${PACKAGES[name]} package` : 'the pinned Go tools (scripts/tools.sh)'
  throw new Error(`${name} not found: it comes from ${from}; ` +
    '`node scripts/provision.js` installs it (npm test does that by itself)')
}
