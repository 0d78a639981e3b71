#!/usr/bin/env node
// flows serve | migrate
import { runCli } from '@suite/kit'
import service from './service.js'

await runCli(service, {})
