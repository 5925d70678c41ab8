/**
 * Loaded into s3rver before it starts (`node --import`, local/java.ts s3rverCommand). s3rver's
 * filesystem store removes the directories a delete leaves empty; a PUT into the same directory
 * (another key of the same prefix) that is opening its file at that moment gets ENOENT, which
 * s3rver does not handle, and the whole server exits. The group commit's stage deletes and puts
 * under one prefix all the time, so here a delete removes only the object's files.
 */
import { unlink } from 'node:fs/promises';
import { createRequire } from 'node:module';

// (s3rver is CommonJS: its own require of the store then finds this patched copy in the cache)
const load = createRequire(import.meta.url);
const FilesystemStore = load('s3rver/lib/stores/filesystem.js');

FilesystemStore.prototype.deleteObject = async function deleteObject(bucket, key) {
  await Promise.all(['object', 'object.md5', 'metadata.json'].map((kind) => unlink(this.getResourcePath(bucket, key, kind)).catch((err) => {
    if (err.code !== 'ENOENT') throw err;
  })));
};
