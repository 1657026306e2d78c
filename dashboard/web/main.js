// colltest dashboard: starts the page once every script (app.js, plotkit.js, plots.js,
// compare.js, health.js, trend.js) has defined its functions.
'use strict';

init();
