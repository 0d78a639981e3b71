// Restaurant profiles (Grubby Hub): reads with 75% on 20 hot ids, on the API and the original
// client's /profile path; writes — POST, or GET for the ETag then PUT / PATCH with If-Match (such an
// iteration is two requests). The traffic and its settings: scenarios.js (profile).
//   k6 run --no-usage-report -e BASE_URL=http://localhost:3001 -e RATE=100 loadtests/k6/profile.js
// IDS, HOT_IDS, HOT_SHARE, WRITE_SHARE, READ_MIX, WRITE_MIX; RATE, DURATION, P95_MS…
import { options as optionsFor, iteration } from './lib.js'

export const options = optionsFor('profile')
export const profile = iteration('profile')
export default profile
