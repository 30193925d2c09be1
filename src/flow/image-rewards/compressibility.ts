/**
 * Image reward `compressibility`: 1 − deflated bytes / pixels of the PNG scanlines, DDPO / Flow-GRPO's
 * JPEG-compressibility reward made lossless (src/rewards/image.ts compressibility).
 */
import { compressibility } from '../../rewards/image.js';
import { pixelImageReward } from '../image-reward.js';

export const compressibilityReward = pixelImageReward(
  {
    name: 'compressibility',
    description: '1 − deflated bytes / pixels (PNG scanlines, zlib level 9): simpler images score higher',
    citation: 'DDPO / Flow-GRPO jpeg_compressibility, lossless here',
  },
  compressibility,
);
