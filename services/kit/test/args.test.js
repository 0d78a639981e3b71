// The command-line helpers every command uses (src/args.js): parsing with --help, the usage text,
// and the checks of values, each naming the option it refuses.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import {
  parseCommand, usageText, UsageError, wholeNumber, wholeNumbers, numberIn, oneOf, someOf, duration, settings
} from '../src/cli/args.js'

const spec = {
  usage: 'tool [options]',
  summary: 'Does a thing.',
  options: {
    size: { type: 'string', value: 'N', default: '10', help: 'how many' },
    fast: { type: 'boolean', default: false, help: 'go fast' },
    tag: { type: 'string', value: 'T', multiple: true, default: [], help: 'a tag' }
  },
  examples: ['tool --size 5']
}

test('the usage lists every option with its value, help and default, then the examples', () => {
  assert.equal(usageText(spec), [
    'usage: tool [options]', '', 'Does a thing.', '', 'options:',
    '  --size N  how many (default: 10)',
    '  --fast    go fast',
    '  --tag T   a tag (repeatable)',
    '  --help    print this help and exit',
    '', 'examples:', '  tool --size 5', ''
  ].join('\n'))
})

test('parsing: defaults, values, repeated options; a mistake is a UsageError on one line', () => {
  assert.deepEqual({ ...parseCommand(spec, []) }, { size: '10', fast: false, tag: [] })
  assert.deepEqual(
    { ...parseCommand(spec, ['--size', '3', '--fast', '--tag', 'a', '--tag', 'b']) },
    { size: '3', fast: true, tag: ['a', 'b'] }
  )
  for (const args of [['--nope'], ['--size'], ['extra'], ['--size', '-3']]) {
    assert.throws(
      () => parseCommand(spec, args),
      (err) => err instanceof UsageError && !err.message.includes('\n'),
      args.join(' ')
    )
  }
})

test('the checks name the option and what they got', () => {
  assert.equal(wholeNumber({ n: '12' }, 'n'), 12)
  assert.throws(() => wholeNumber({ n: '1.5' }, 'n'), /^Error: --n must be a whole number \(got "1.5"\)$/)
  assert.throws(() => wholeNumber({ n: '0' }, 'n', { min: 1 }), /--n must be a whole number ≥ 1 \(got "0"\)/)
  assert.deepEqual(wholeNumbers({ s: '1, 10,100' }, 's', { min: 1 }), [1, 10, 100])
  assert.throws(() => wholeNumbers({ s: '1,,3' }, 's'), /--s must be a comma-separated list of whole numbers/)
  assert.equal(numberIn({ r: '0.05' }, 'r', { min: 0, max: 1 }), 0.05)
  assert.throws(() => numberIn({ r: '2' }, 'r', { min: 0, max: 1 }), /--r must be a number ≥ 0 ≤ 1 \(got "2"\)/)
  assert.throws(() => numberIn({ r: '' }, 'r'), /--r must be a number/)
  assert.equal(oneOf({ c: 'b' }, 'c', ['a', 'b']), 'b')
  assert.throws(() => oneOf({ c: 'z' }, 'c', ['a', 'b']), /--c must be one of a, b \(got "z"\)/)
  assert.deepEqual(someOf({ c: 'a,b' }, 'c', ['a', 'b']), ['a', 'b'])
  assert.throws(() => someOf({ c: 'a,z' }, 'c', ['a', 'b']), /--c must be a comma-separated list of a, b/)
  assert.deepEqual(['500ms', '30s', '2m', '1h'].map((d) => duration({ d }, 'd')), [0.5, 30, 120, 3600])
  assert.throws(() => duration({ d: '30' }, 'd'), /--d must be a duration such as 30s or 2m \(got "30"\)/)
  assert.deepEqual(
    settings({ env: ['A_1=x=y', 'B='] }, 'env'),
    { A_1: 'x=y', B: '' },
    'the value is everything after the first =, empty too'
  )
  assert.deepEqual(settings({}, 'env'), {})
  for (const bad of ['a=1', '=1', 'A', '1A=2']) {
    assert.throws(
      () => settings({ env: [bad] }, 'env'),
      new RegExp(`^Error: --env must be NAME=VALUE with NAME in capitals \\(got "${bad}"\\)$`)
    )
  }
})
