// The face of directory/: what other folders may use of it, re-exported from the files that define it.
// Written by scripts/rooms-codemod.mjs from what other folders import (node scripts/rooms-codemod.mjs);
// other folders import from here, never from an inner file (test/shared/module-graph.test.ts).
export { DirectorySync } from "./directory-sync.js";
export type { SyncStatus } from "./directory-sync.js";
export { LdapSource } from "./ldap-source.js";
export { Leavers } from "./leavers.js";
export { mergePeople, withDirectoryInboxes } from "./merge.js";
export type { DirectoryPerson } from "./person.js";
export { ScimDirectory } from "./scim-directory.js";
export { scimRoutes } from "./scim-routes.js";
