// Copies the repository's LICENSE beside package.json before `npm pack`, so that the tarball
// carries the licence text its "license" field names (Apache-2.0). Node only, no dependencies.
import { copyFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const kit = join(dirname(fileURLToPath(import.meta.url)), '..');
copyFileSync(join(kit, '..', '..', 'LICENSE'), join(kit, 'LICENSE'));
