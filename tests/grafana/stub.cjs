// Stands in for a query-editor module (see setup.cjs): any export is a no-op.
'use strict';
module.exports = new Proxy({}, { get: (_, k) => (k === '__esModule' ? false : () => null) });
