#!/usr/bin/env node
// Checks a release before it is installed (`npm run release:verify -- <version>`): the umbrella chart's
// signature, the chart pulled being the one signed, and for each image the chart pins: its signature,
// its SBOM attestation, and that its tag still names the pinned digest (a tag moved to another image is
// a tampered release). Prints the checked chart archive to install; refuses (exit 1) at the first
// failed check, naming it.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parse } from 'yaml'
import { UsageError, UserError, runCommand } from '@suite/kit/args'
import { artifacts, cosignRegistryArgs } from './artifacts.js'

/**
 * Verifies `version` in `registry` with the cosign public key `key` (or a keyless identity); returns
 * { chart, images }.
 */
export function verifyRelease ({
  version,
  registry,
  key,
  identity,
  issuer,
  out = mkdtempSync(join(tmpdir(), 'suite-verify-')),
  log = console.log
}) {
  const a = artifacts(version, registry)
  const trust = key
    ? ['--key', key, '--insecure-ignore-tlog']
    : ['--certificate-identity', identity, '--certificate-oidc-issuer', issuer]
  if (!key && !(identity && issuer)) throw new UsageError('give --key, or --identity and --issuer (keyless)')
  const run = (cmd, args, what) => {
    const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20 })
    if (r.error) throw new UserError(`${cmd}: ${r.error.code === 'ENOENT' ? 'not found on PATH' : r.error.message}`)
    if (r.status !== 0) {
      throw new UserError(`refused: ${what}: ${(r.stderr || r.stdout).trim().split('\n').filter(Boolean).at(-1)}`)
    }
    return r.stdout + r.stderr
  }
  const cosign = (args, what) => run('cosign', [...args, ...trust, ...cosignRegistryArgs(a)], what)

  const chartDigest = a.resolve(a.chart('suite'))
  cosign(['verify', `${a.chartRepo('suite')}@${chartDigest}`], `chart ${a.chart('suite')} is not signed by this key`)
  log(`chart ${a.chart('suite')}@${chartDigest}: signature verified`)
  const pulled = run('helm', [
    'pull', `oci://${a.chartRepo('suite')}`, '--version', version, '-d', out, ...(a.plainHttp ? ['--plain-http'] : [])
  ], `helm pull ${a.chart('suite')}`)
  const got = /Digest: (sha256:[0-9a-f]{64})/.exec(pulled)?.[1]
  if (got !== chartDigest) {
    throw new UserError(`refused: the chart pulled (${got}) is not the one verified (${chartDigest})`)
  }
  const chart = join(out, readdirSync(out).find((f) => f === `suite-${version}.tgz`))
  const values = parse(run('helm', ['show', 'values', chart], 'helm show values'))

  const images = {}
  for (const [name, v] of Object.entries(values)) {
    const digest = v?.image?.digest
    if (!digest) continue
    const repo = a.imageRepo(name)
    cosign(['verify', `${repo}@${digest}`], `image ${repo}@${digest} is not signed by this key`)
    cosign(['verify-attestation', '--type', 'cyclonedx', `${repo}@${digest}`],
      `image ${repo}@${digest} has no SBOM attestation signed by this key`)
    const tagged = a.resolve(a.image(name))
    if (tagged !== digest) {
      throw new UserError(`refused: ${a.image(name)} names ${tagged}, not the signed ${digest} the chart pins: ` +
        'the tag was moved')
    }
    images[name] = `${repo}@${digest}`
    log(`image ${repo}@${digest}: signature and CycloneDX SBOM attestation verified; tag ${version} names it`)
  }
  if (!Object.keys(images).length) {
    throw new UserError('refused: the chart pins no image digest (not a release made by npm run release)')
  }
  return { chart, images }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2)
  const version = args[0]?.startsWith('-') ? undefined : args[0]
  await runCommand('release:verify', {
    usage: 'npm run release:verify -- <version> --registry HOST/PATH (--key cosign.pub | --identity ID --issuer URL)',
    summary: 'Verifies a release of the suite before installing it: the chart\'s signature, and each pinned ' +
      'image\'s signature, SBOM attestation and tag. Prints the verified chart archive.',
    options: {
      registry: {
        type: 'string',
        value: 'HOST/PATH',
        default: 'ghcr.io/suite-project',
        help: 'the registry the release was pushed to'
      },
      key: { type: 'string', value: 'FILE', help: 'cosign public key of the release' },
      identity: { type: 'string', value: 'ID', help: 'keyless: the signer\'s certificate identity' },
      issuer: { type: 'string', value: 'URL', help: 'keyless: its OIDC issuer' }
    },
    examples: ['npm run release:verify -- 0.2.0 --registry ghcr.io/acme/suite --key cosign.pub']
  }, (o) => {
    if (!version) throw new UsageError('name the version first')
    const { chart } = verifyRelease({ version, ...o })
    console.log(`verified: helm install suite ${chart}`)
  }, version ? args.slice(1) : args)
}
