// ESLint (flat config): typescript-eslint's recommended rules over the TypeScript sources. Unused
// exports and files are checked by knip (knip.json), which resolves the `.js` → `.ts` imports natively.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'build/**', 'node_modules/**', 'src/dashboard/public/**', '**/*.mjs', '**/*.js'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      // Tests and numeric kernels use `any` for fixtures read from JSON; the public API types stay strict.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
    },
  },
);
