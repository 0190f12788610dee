package dev.corral.http.metrics;

import dev.corral.core.store.DiskStore;
import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.IOException;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The node's store, read when the metrics are scraped (nothing is counted on the serving path):
 * <ul>
 *   <li>{@code corral_store_bytes}, {@code corral_store_max_bytes}, {@code corral_store_entries};
 *   <li>{@code corral_store_index_loading}: 1 while the index loads after the start, else 0;
 *   <li>{@code corral_store_evictions_total{reason}}: {@code size} (least recently used, to fit the
 *       maximum), {@code damaged} (a blob found missing or corrupt) or {@code unused} (not used for
 *       its repository's {@code max-age-unused}), since the node started;
 *   <li>{@code corral_store_free_disk_bytes}: usable space of the file system of the store's
 *       directory (absent when it cannot be read).
 * </ul>
 */
public final class StoreGauges {
  private StoreGauges() {}

  public static void register(PrometheusRegistry registry, DiskStore store, Path dir) throws IOException {
    GaugeWithCallback.builder()
        .name("corral_store_bytes")
        .help("Bytes of the blobs in this node's store")
        .callback(cb -> cb.call(store.totalSize()))
        .register(registry);
    GaugeWithCallback.builder()
        .name("corral_store_max_bytes")
        .help("The store's maximum size (--max-size); least recently used keys are evicted above it")
        .callback(cb -> cb.call(store.maxSizeBytes()))
        .register(registry);
    GaugeWithCallback.builder()
        .name("corral_store_index_loading")
        .help("1 while the store's index is still being loaded after the start (keys are then looked up on disk; entries and bytes count those loaded so far), else 0")
        .callback(cb -> cb.call(store.indexLoading() ? 1 : 0))
        .register(registry);
    GaugeWithCallback.builder()
        .name("corral_store_entries")
        .help("Keys held in this node's store")
        .callback(cb -> cb.call(store.keyCount()))
        .register(registry);
    CounterWithCallback.builder()
        .name("corral_store_evictions_total")
        .help("Keys the store stopped holding by itself: size (least recently used), damaged (blob missing or corrupt) or unused (max-age-unused)")
        .labelNames("reason")
        .callback(cb -> {
          for (DiskStore.Eviction reason : DiskStore.Eviction.values()) {
            cb.call(store.evictions(reason), reason.label());
          }
        })
        .register(registry);
    FileStore disk = Files.getFileStore(dir);
    GaugeWithCallback.builder()
        .name("corral_store_free_disk_bytes")
        .help("Usable bytes left on the file system of the store's directory")
        .callback(cb -> {
          try {
            cb.call(disk.getUsableSpace());
          } catch (IOException e) {
            // not shown this scrape
          }
        })
        .register(registry);
  }
}
