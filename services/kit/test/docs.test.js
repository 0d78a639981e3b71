// the table is written by npm run generate
// services/README.md stays true: every setting the kit reads is in its configuration table.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { baseSchema } from '@suite/kit'

test('services/README.md documents every setting of the kit with its default', () => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')
  for (const [name, schema] of Object.entries(baseSchema.properties)) {
    const row = readme.split('\n').find((line) => line.startsWith(`| \`${name}\` |`))
    assert.ok(row, `${name} is missing from the configuration table of services/README.md`)
    // Defaults computed from the machine (CPUs, heap and memory limits) are described in words.
    const computed = ['WORKERS', 'MAX_HEAP_USED_BYTES', 'MAX_RSS_BYTES'].includes(name)
    if (typeof schema.default === 'boolean' || (typeof schema.default === 'number' && !computed)) {
      assert.ok(row.includes(`\`${schema.default}\``), `${name}: services/README.md default differs from ${schema.default}`)
    }
  }
})
