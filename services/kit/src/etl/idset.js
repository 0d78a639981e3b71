// A set of positive 32-bit ids in a growable bitset: 10 million ids take 1.25 MB, where a Set would
// take hundreds. Ids past BITSET_LIMIT go to a plain Set, so one huge id cannot blow up memory.
const BITSET_LIMIT = 2 ** 27 // 16 MB of bits at most

export class IdSet {
  constructor () {
    this.bits = new Uint8Array(1 << 16)
    this.large = new Set()
    this.size = 0
  }

  has (id) {
    if (id >= BITSET_LIMIT) return this.large.has(id)
    const byte = id >>> 3
    return byte < this.bits.length && (this.bits[byte] & (1 << (id & 7))) !== 0
  }

  /** Adds id; false if it was there already. */
  add (id) {
    if (id >= BITSET_LIMIT) {
      if (this.large.has(id)) return false
      this.large.add(id)
    } else {
      const byte = id >>> 3
      if (byte >= this.bits.length) {
        let length = this.bits.length
        while (length <= byte) length *= 2
        const grown = new Uint8Array(length)
        grown.set(this.bits)
        this.bits = grown
      }
      const mask = 1 << (id & 7)
      if (this.bits[byte] & mask) return false
      this.bits[byte] |= mask
    }
    this.size++
    return true
  }
}
