#!/usr/bin/env node
// `npm run release -- <version>`: one release of the suite, each step printed with its command.
// The version everywhere (package.json, then npm run generate), the CHANGELOG.md section, the images
// from services/Dockerfile pushed to an OCI registry, a CycloneDX SBOM of each, the charts packaged
// with the images' digests pinned and pushed, then images, SBOMs (as attestations) and charts signed
// with cosign. --dry-run prints the whole release and changes nothing. Verify before installing:
// scripts/release/verify.js. The steps and names live in scripts/release/steps.js.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { UsageError, UserError, runCommand } from '@suite/kit/args'
import { changes } from './generate/versions.js'
import { releaseSteps } from './release/steps.js'
import { root } from '../charts/test/lib.js'

const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?$/

/** Is semantic version a older than b (a pre-release before its release)? */
function older (a, b) {
  const [pa, pb] = [a, b].map((v) => SEMVER.exec(v))
  for (let i = 1; i <= 3; i++) if (Number(pa[i]) !== Number(pb[i])) return Number(pa[i]) < Number(pb[i])
  return Boolean(pa[4]) && !pb[4]
}

const spec = {
  usage: 'npm run release -- <version> [options]   (or node scripts/release.js <version> [options])',
  summary: 'Releases the suite at <version>: bumps every version, checks CHANGELOG.md, builds, pushes, ' +
    'SBOMs and signs the images, packages, pushes and signs the charts. Each step prints its command.',
  options: {
    'dry-run': {
      type: 'boolean',
      default: false,
      help: 'print every step and its command; change, build and push nothing'
    },
    registry: {
      type: 'string',
      value: 'HOST[:PORT]/PATH',
      default: 'ghcr.io/suite-project',
      help: 'where the images (<registry>/suite-<service>) and charts (oci://<registry>/charts) go; ' +
        'a localhost registry is spoken to over plain HTTP'
    },
    key: {
      type: 'string',
      value: 'FILE',
      help: 'cosign private key (its password in COSIGN_PASSWORD); ' +
        'without it, cosign signs keyless (an OIDC identity, as in CI)'
    },
    tree: {
      type: 'string',
      value: 'DIR',
      help: 'release another checkout as it is (its versions must already be <version>), ' +
        'e.g. a git worktree of an earlier tag; default: this one, bumped'
    },
    out: {
      type: 'string',
      value: 'DIR',
      help: 'where the SBOMs, chart archives and release.json go (default: a new folder in the temporary directory)'
    },
    'node-image': {
      type: 'string',
      value: 'IMAGE',
      help: 'services/Dockerfile\'s NODE_IMAGE (default: its own, node:24-bookworm-slim)'
    }
  },
  examples: [
    'npm run release -- 0.2.0 --dry-run',
    'COSIGN_PASSWORD=… npm run release -- 0.2.0 --registry ghcr.io/acme/suite --key cosign.key',
    'npm run release -- 0.2.0 --registry localhost:30500/suite --key /tmp/cosign.key   # the lab cluster\'s registry'
  ]
}

const args = process.argv.slice(2)
const version = args[0]?.startsWith('-') ? undefined : args[0]
await runCommand('release', spec, async (o) => {
  if (!version) throw new UsageError('name the version first: npm run release -- <version> [options]')
  if (!SEMVER.test(version)) throw new UsageError(`<version> must be a semantic version like 1.4.0 (got "${version}")`)
  const current = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version
  if (!o.tree && older(version, current)) {
    throw new UsageError(`${version} is older than this checkout's ${current}: ` +
      'release an earlier version from its tag (--tree)')
  }
  // The changelog of every release is this checkout's, also for an earlier tree (its own may predate it).
  try {
    changes(readFileSync(join(root, 'CHANGELOG.md'), 'utf8'), version)
  } catch (err) {
    throw new UserError(`${err.message}: write what changed, and what a user does on upgrade, first`)
  }
  const steps = releaseSteps({
    version,
    registry: o.registry,
    key: o.key,
    tree: o.tree,
    out: o.out,
    nodeImage: o['node-image'],
    dryRun: o['dry-run']
  })
  await steps.run()
}, version ? args.slice(1) : args)
