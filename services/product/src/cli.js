#!/usr/bin/env node
// product serve | migrate | generate | load   (see --help of each in the README)
import { runCli } from '@suite/kit'

await runCli(new URL('./service.js', import.meta.url), {})
