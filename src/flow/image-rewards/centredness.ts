/** Image reward `centredness`: how close the ink's centre of mass is to the image centre (src/rewards/image.ts). */
import { centredness } from '../../rewards/image.js';
import { pixelImageReward } from '../image-reward.js';

export const centrednessReward = pixelImageReward(
  {
    name: 'centredness',
    description: 'how close the ink centre is to the image centre',
    citation: 'src/rewards/image.ts',
  },
  centredness,
);
