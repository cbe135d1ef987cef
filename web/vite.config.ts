import { defineConfig } from "vite";

// No React plugin: esbuild's automatic JSX runtime is all the app needs (no Fast Refresh in a
// committed, embedded bundle), and it keeps the build's dependencies few.
export default defineConfig({
  esbuild: { jsx: "automatic" },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    // Hashed names only (no timestamps), so a rebuild from the same sources is byte-identical
    // and CI can compare it with the committed bundle.
    assetsDir: "assets",
    sourcemap: false,
    modulePreload: { polyfill: false },
    target: "es2022",
    chunkSizeWarningLimit: 400,
  },
  server: {
    proxy: { "/api": "http://127.0.0.1:8787" },
  },
});
