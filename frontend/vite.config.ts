import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

const backend = process.env.STEPWISE_BACKEND ?? 'http://127.0.0.1:8787';

export default defineConfig({
  plugins: [react()],
  server: {
    proxy: {
      '/api': backend,
      '/ws': { target: backend.replace(/^http/, 'ws'), ws: true },
    },
  },
  build: { target: 'es2022', sourcemap: false },
});
