import { admin } from './crud-routes.js';
import type { RouteDoc } from './operations.js';
import { dataResponse } from './session-paths.js';

/** Which release serves the management API; no anonymous endpoint says (docs/operations.md, "Versions"). */
export const versionRoutes: RouteDoc[] = [
  {
    ...admin,
    method: 'get',
    path: '/version',
    operationId: 'getVersion',
    summary: 'The running release, its Node.js runtime and the newest migration of the database',
    description:
      'Per instance: during a rolling upgrade each answers with its own release, and all with the ' +
      "database's newest migration. No anonymous endpoint names the release.",
    tag: 'Controller',
    response: dataResponse("This instance's release.", 'ControllerVersion'),
  },
];
