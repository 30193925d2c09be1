/** Image reward `thickness`: mean ink, so bolder strokes score higher (src/rewards/image.ts strokeThickness). */
import { strokeThickness } from '../../rewards/image.js';
import { pixelImageReward } from '../image-reward.js';

export const thicknessReward = pixelImageReward(
  {
    name: 'thickness',
    description: 'mean ink: thicker (bolder) strokes score higher',
    citation: 'src/rewards/image.ts',
  },
  strokeThickness,
);
