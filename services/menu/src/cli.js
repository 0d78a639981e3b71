#!/usr/bin/env node
// menu serve | migrate | generate | load | seed
import { runCli } from '@suite/kit/cli'
import service from './service.js'

await runCli(service)
