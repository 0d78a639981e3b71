#!/usr/bin/env node
// flows serve | migrate
import { runCli } from '@suite/kit'

await runCli(new URL('./service.js', import.meta.url), {})
