/**
 * A store-only zip archive (no compression) written in memory, so the page can hand a checkpoint
 * folder to the user as one download: local headers, the central directory and its end record, with
 * each file's CRC-32, names in UTF-8 (flag bit 11). Any unzip tool and Python's zipfile read it.
 *
 * Is not: a general zip library. No compression (safetensors weights barely compress), no ZIP64 (the
 * archive and each file stay under 4 GiB, refused otherwise), no reading.
 */

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC-32 (IEEE 802.3, as zip and gzip use it) of `bytes`. */
export function crc32(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) crc = CRC_TABLE[(crc ^ bytes[i]) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

const LIMIT = 0xffffffff;

/** Zips `files` (path inside the archive → bytes) without compression, stamped with `modified` (local time). */
export function storeZip(files: Map<string, Uint8Array>, modified: Date): Uint8Array {
  const encoder = new TextEncoder();
  // MS-DOS date and time, two-second resolution; zip cannot express years before 1980.
  const time = (modified.getHours() << 11) | (modified.getMinutes() << 5) | (modified.getSeconds() >> 1);
  const date =
    ((Math.max(1980, modified.getFullYear()) - 1980) << 9) | ((modified.getMonth() + 1) << 5) | modified.getDate();
  const entries = [...files].map(([name, data]) => ({ name: encoder.encode(name), data, crc: crc32(data), offset: 0 }));
  const localBytes = entries.reduce((sum, entry) => sum + 30 + entry.name.length + entry.data.length, 0);
  const centralBytes = entries.reduce((sum, entry) => sum + 46 + entry.name.length, 0);
  if (localBytes + centralBytes + 22 > LIMIT || entries.length > 0xffff)
    throw new Error(`the checkpoint zip would take ${localBytes + centralBytes + 22} bytes; over 4 GiB needs ZIP64`);
  const out = new Uint8Array(localBytes + centralBytes + 22);
  const view = new DataView(out.buffer);
  let at = 0;
  const u16 = (value: number) => (view.setUint16(at, value, true), (at += 2));
  const u32 = (value: number) => (view.setUint32(at, value, true), (at += 4));
  // The fields a local header and a central-directory entry share, from "version needed" on.
  const common = (entry: (typeof entries)[number]) => {
    u16(20); // version needed: 2.0
    u16(0x0800); // names are UTF-8
    u16(0); // stored
    u16(time);
    u16(date);
    u32(entry.crc);
    u32(entry.data.length); // compressed size = size
    u32(entry.data.length);
    u16(entry.name.length);
    u16(0); // no extra field
  };
  for (const entry of entries) {
    entry.offset = at;
    u32(0x04034b50);
    common(entry);
    out.set(entry.name, at);
    out.set(entry.data, at + entry.name.length);
    at += entry.name.length + entry.data.length;
  }
  const centralStart = at;
  for (const entry of entries) {
    u32(0x02014b50);
    u16(20); // made by: MS-DOS attributes, 2.0
    common(entry);
    u16(0); // no comment
    u16(0); // disk 0
    u16(0); // internal attributes
    u32(0); // external attributes
    u32(entry.offset);
    out.set(entry.name, at);
    at += entry.name.length;
  }
  const centralSize = at - centralStart;
  u32(0x06054b50);
  u16(0); // this disk
  u16(0); // the disk where the central directory starts
  u16(entries.length);
  u16(entries.length);
  u32(centralSize);
  u32(centralStart);
  u16(0); // no comment
  return out;
}
