// Runs before `npm start` and `npm test`: checks the Node version and installs the dependencies on
// a fresh clone (or after package-lock.json changed), so the quick start is two commands.
import { execSync } from 'node:child_process'
import { existsSync, statSync } from 'node:fs'

const major = Number(process.versions.node.split('.')[0])
if (major < 24) {
  console.error(`the suite needs Node.js 24 LTS (this is ${process.version}); ` +
    'e.g. `npm i node@24` in a tools folder and put its node_modules/.bin first on PATH')
  process.exit(1)
}
const installed = 'node_modules/.package-lock.json'
if (!existsSync(installed) || statSync(installed).mtimeMs < statSync('package-lock.json').mtimeMs) {
  console.error('installing dependencies (npm ci)…')
  execSync('npm ci --no-audit --no-fund', { stdio: 'inherit' })
}
