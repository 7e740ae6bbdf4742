// Reads what pkg embedded in an executable: Node's single-executable blob (the NODE_SEA_BLOB note
// that postject injected) and, inside it, pkg's manifest and archive. For scripts/check-reproducible.ts,
// to say which embedded file two executables differ in, and for a site that wants a checksum of the
// payload alone (docs/operations.md, Verifying an executable).
//
// The blob as Node 22.20+ writes it (src/node_sea.cc, SeaSerializer): the magic 0x0143da20 (u32 LE),
// flags (u32), the exec-argv extension (u8), then string views (a u64 length and the bytes): the
// main script's path, the main script, the V8 code cache when flags has kUseCodeCache, and when
// flags has kIncludeAssets a u64 count of assets, each a name and its bytes.

const MAGIC = 0x0143da20;
const USE_CODE_CACHE = 1 << 2;
const INCLUDE_ASSETS = 1 << 3;
/** The name postject gives the blob's ELF note, right before the blob. */
const NOTE_NAME = Buffer.from('NODE_SEA_BLOB\0\0\0');

export interface SeaBlob {
  /** Offset of the blob in the executable, and its length. */
  offset: number;
  length: number;
  flags: number;
  /** Where the main script was when the blob was made (recorded by Node, used as its file name). */
  codePath: string;
  main: Buffer;
  codeCache?: Buffer;
  assets: Map<string, Buffer>;
}

export interface PkgPayload {
  manifest: { entrypoint: string; offsets: Record<string, [number, number]>; [key: string]: unknown };
  /** Each file pkg packed, by its path in the snapshot. */
  files: Map<string, Buffer>;
}

/** The SEA blob of an executable, or undefined when it has none (or one this reader does not know). */
export function readSeaBlob(exe: Buffer): SeaBlob | undefined {
  const magic = Buffer.alloc(4);
  magic.writeUInt32LE(MAGIC);
  const at = exe.indexOf(Buffer.concat([NOTE_NAME, magic]));
  if (at < 0) return undefined;
  const offset = at + NOTE_NAME.length;
  let p = offset + 4;
  const need = (n: number) => {
    if (p + n > exe.length) throw new Error('SEA blob: truncated');
  };
  const u64 = () => {
    need(8);
    const v = exe.readBigUInt64LE(p);
    p += 8;
    if (v > BigInt(exe.length)) throw new Error('SEA blob: a length past the end of the file');
    return Number(v);
  };
  const bytes = () => {
    const n = u64();
    need(n);
    const b = exe.subarray(p, p + n);
    p += n;
    return b;
  };
  try {
    need(5);
    const flags = exe.readUInt32LE(p);
    p += 4 + 1; // flags, exec-argv extension
    const codePath = bytes().toString('utf8');
    const main = bytes();
    const codeCache = flags & USE_CODE_CACHE ? bytes() : undefined;
    const assets = new Map<string, Buffer>();
    if (flags & INCLUDE_ASSETS) {
      for (let n = u64(); n > 0; n--) {
        const name = bytes().toString('utf8');
        assets.set(name, bytes());
      }
    }
    return { offset, length: p - offset, flags, codePath, main, codeCache, assets };
  } catch {
    return undefined;
  }
}

/** pkg's manifest and the files of its archive (uncompressed builds: the build compresses none). */
export function readPkgPayload(blob: SeaBlob): PkgPayload | undefined {
  const manifestBytes = blob.assets.get('__pkg_manifest__');
  const archive = blob.assets.get('__pkg_archive__');
  if (!manifestBytes || !archive) return undefined;
  const manifest = JSON.parse(manifestBytes.toString('utf8')) as PkgPayload['manifest'];
  const files = new Map<string, Buffer>();
  for (const [name, [start, length]] of Object.entries(manifest.offsets ?? {})) files.set(name, archive.subarray(start, start + length));
  return { manifest, files };
}

/** Where two executables differ, by the parts of what pkg embedded. */
export function differences(a: Buffer, b: Buffer): string[] {
  const lines = [`${a.length} and ${b.length} bytes; ${differingBytes(a, b)} bytes differ`];
  const [ba, bb] = [readSeaBlob(a), readSeaBlob(b)];
  if (!ba || !bb) return [...lines, 'no SEA blob found in one of them: compare with cmp -l'];
  const before = differingBytes(a.subarray(0, ba.offset), b.subarray(0, bb.offset));
  // a blob of another length changes a few bytes of the ELF headers (the note's and segment's sizes)
  if (before) lines.push(`${before} bytes before the blob (the Node binary; ${ba.length === bb.length ? 'not the same node_modules/node?' : 'with blobs of different lengths its ELF headers differ in a few'})`);
  if (ba.codePath !== bb.codePath) lines.push(`the blob's main-script path: ${ba.codePath} / ${bb.codePath}`);
  if (!ba.main.equals(bb.main)) lines.push("pkg's bootstrap (the blob's main script; not the same @yao-pkg/pkg?)");
  if (Boolean(ba.codeCache) !== Boolean(bb.codeCache) || (ba.codeCache && bb.codeCache && !ba.codeCache.equals(bb.codeCache))) lines.push('the V8 code cache');
  const [pa, pb] = [readPkgPayload(ba), readPkgPayload(bb)];
  if (!pa || !pb) return [...lines, 'no pkg manifest or archive in one of them'];
  // the same file under snapshot folders of different names (/repo/… and /repo2/…) is compared
  const inRoot = (p: PkgPayload) => new Map([...p.files].map(([name, bytes]) => [name.replace(/^\/[^/]*/, ''), bytes]));
  const manifest = (p: PkgPayload) => JSON.stringify({ ...p.manifest, offsets: undefined });
  if (manifest(pa) !== manifest(pb)) lines.push(`pkg's manifest (entry points ${pa.manifest.entrypoint} / ${pb.manifest.entrypoint})`);
  const [fa, fb] = [inRoot(pa), inRoot(pb)];
  for (const name of [...new Set([...fa.keys(), ...fb.keys()])].sort()) {
    const [x, y] = [fa.get(name), fb.get(name)];
    if (!x || !y) lines.push(`${name}: only in the ${x ? 'first' : 'second'}`);
    else if (!x.equals(y)) lines.push(`${name}: ${differingBytes(x, y)} bytes differ (${x.length} / ${y.length} bytes)`);
  }
  const after = differingBytes(a.subarray(ba.offset + ba.length), b.subarray(bb.offset + bb.length));
  if (after) lines.push(`${after} bytes after the blob`);
  return lines;
}

/** Bytes that differ at the same offset, plus the difference in length. */
function differingBytes(a: Buffer, b: Buffer): number {
  let n = Math.abs(a.length - b.length);
  for (let i = 0, end = Math.min(a.length, b.length); i < end; i++) if (a[i] !== b[i]) n++;
  return n;
}
