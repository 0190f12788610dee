package dev.corral.cluster;

import dev.corral.core.download.Outcome;
import dev.corral.core.fetch.Peers;
import dev.corral.core.fetch.Reply;
import dev.corral.core.fetch.Via;
import dev.corral.core.store.KeyPrefix;
import dev.corral.core.store.StoredArtifact;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.apache.pekko.actor.typed.receptionist.ServiceKey;
import org.apache.pekko.cluster.typed.Cluster;

/**
 * The other nodes of a Pekko cluster: this node is named in key records by its peer endpoint's
 * base URL, small bodies travel inside replies and larger ones are copied from the holder's
 * {@link PeerEndpoint} over HTTP.
 *
 * <p>The one thing set after construction is this node's URL, known once its HTTP server is bound
 * (the port may be chosen then); until {@link #bound} a waiter on another node is told to ask
 * again, and this node lists itself as no holder.
 *
 * <p>Each node registers its peer URL with the cluster's receptionist (as the name of an actor
 * under {@link #PEER_KEY}); a URL that was listed and is no more belongs to a node that left or
 * was downed, and is not offered as a holder ({@link #live}) until a node with that URL is listed
 * again.
 */
public final class ClusterPeers implements Peers {
  private final ActorSystem<?> system;
  private final PeerBlobs client;
  private final long inlineLimit;
  private final AtomicReference<String> self = new AtomicReference<>();
  /** The receptionist's key under which every node lists its peer URL. */
  static final ServiceKey<Object> PEER_KEY = ServiceKey.create(Object.class, "corral-peer-url");
  private final Set<String> gone = ConcurrentHashMap.newKeySet();
  private volatile Set<String> listed = Set.of();

  /**
   * @param inlineLimit the largest body sent inside a reply to another node; it must fit Artery's
   *     {@code maximum-large-frame-size} with room for the headers. Larger bodies are read from
   *     the holder's peer endpoint.
   */
  public ClusterPeers(ActorSystem<?> system, PeerBlobs client, long inlineLimit) {
    this.system = system;
    this.client = client;
    this.inlineLimit = inlineLimit;
  }

  /** This node's HTTP server is bound at {@code selfUrl} (scheme, address and port). */
  public void bound(String selfUrl) {
    self.set(selfUrl);
    String name = "corral-peer-" + URLEncoder.encode(selfUrl, StandardCharsets.UTF_8);
    ActorRef<Object> listedAs = system.systemActorOf(Behaviors.ignore(), name, Props.empty());
    system.receptionist().tell(Receptionist.register(PEER_KEY, listedAs));
    ActorRef<Receptionist.Listing> listener = system.systemActorOf(
        Behaviors.receive(Receptionist.Listing.class).onMessage(Receptionist.Listing.class, listing -> {
          listingChanged(listing.getServiceInstances(PEER_KEY));
          return Behaviors.same();
        }).build(), "corral-peer-listing", Props.empty());
    system.receptionist().tell(Receptionist.subscribe(PEER_KEY, listener));
  }

  private void listingChanged(Set<ActorRef<Object>> instances) {
    Set<String> now = new HashSet<>();
    for (ActorRef<Object> ref : instances) {
      String name = ref.path().name();
      if (name.startsWith("corral-peer-")) {
        now.add(URLDecoder.decode(name.substring("corral-peer-".length()), StandardCharsets.UTF_8));
      }
    }
    for (String before : listed) {
      if (!now.contains(before)) {
        gone.add(before);
      }
    }
    gone.removeAll(now);
    listed = Set.copyOf(now);
  }

  @Override
  public List<String> live(List<String> holders) {
    return holders.stream().filter(h -> !gone.contains(h)).toList();
  }

  @Override
  public Optional<String> self() {
    return Optional.ofNullable(self.get());
  }

  @Override
  public boolean othersMayHold() {
    return self.get() != null && Cluster.get(system).state().members().size() > 1;
  }

  @Override
  public Reply forAnotherNode(Outcome outcome, Via via, List<String> alsoHeldBy) {
    String url = self.get();
    if (url == null) {
      // A node still starting cannot hand bytes to other nodes; a local-only reply would point
      // the waiter at its own store or downloads.
      return new Reply.Retry("this node cannot serve other nodes yet");
    }
    return CrossNodeReplies.encode(outcome, via, url, inlineLimit, alsoHeldBy);
  }

  @Override
  public Reply staleForAnotherNode(StoredArtifact stored, boolean revalidationFailed, List<String> alsoHeldBy) {
    String url = self.get();
    if (url == null) {
      return new Reply.Retry("this node cannot serve other nodes yet");
    }
    return CrossNodeReplies.stale(stored, url, revalidationFailed, alsoHeldBy);
  }

  @Override
  public boolean pointsAtBytes(Outcome outcome) {
    return CrossNodeReplies.pointsAtBytes(outcome, inlineLimit);
  }

  @Override
  public Reply fromSource(Outcome outcome, Via via, Source source, List<Source> alsoAt) {
    if (self.get() == null) {
      return new Reply.Retry("this node cannot serve other nodes yet");
    }
    Reply pointer = CrossNodeReplies.pointer(outcome, via, source, alsoAt);
    return pointer != null ? pointer : forAnotherNode(outcome, via, List.of());
  }

  @Override
  public Arrival arrived(Reply.ForAnotherNode reply) {
    return CrossNodeReplies.decode(reply, (java.util.function.Function<List<PeerCopy.At>, PeerCopy>) at -> {
      Set<String> live = new HashSet<>(live(at.stream().map(PeerCopy.At::peerUrl).toList()));
      return new PeerCopy(client, at.stream().filter(a -> live.contains(a.peerUrl())).toList(), system);
    });
  }

  @Override
  public CompletionStage<Boolean> dropCopy(String holder, String keyId) {
    return client.delete(holder, PeerEndpoint.keyPath(keyId)).thenApply(status -> {
      if (status == 200 || status == 404) {
        return status == 200;
      }
      throw new IllegalStateException(holder + " answered " + status);
    });
  }

  @Override
  public List<String> others() {
    String me = self.get();
    return listed.stream().filter(n -> !n.equals(me)).sorted().toList();
  }

  @Override
  public CompletionStage<List<String>> dropMatching(String node, KeyPrefix prefix) {
    return client.deleteRead(node, PeerEndpoint.prefixPath(prefix), PeerEndpoint.MAX_DROPPED_BYTES)
        .thenApply(PeerEndpoint::droppedIds);
  }

  @Override
  public HolderCopy copy(List<String> holders, String sha256) {
    return new PeerCopy(client, holders, PeerEndpoint.blobPath(sha256), system);
  }
}
