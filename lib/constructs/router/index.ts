export * from './mapping-bucket';
export * from './router-group';
export * from './router-stack';
export * from './cell-links';
export * from './router-groups-stack';
export * from './move-bucket';
export * from './router-parts';
export * from './home-region-guard';
