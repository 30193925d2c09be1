/** Image reward `symmetry`: left-right mirror similarity of the ink (src/rewards/image.ts leftRightSymmetry). */
import { leftRightSymmetry } from '../../rewards/image.js';
import { pixelImageReward } from '../image-reward.js';

export const symmetryReward = pixelImageReward(
  { name: 'symmetry', description: 'left-right mirror similarity of the ink', citation: 'src/rewards/image.ts' },
  leftRightSymmetry,
);
