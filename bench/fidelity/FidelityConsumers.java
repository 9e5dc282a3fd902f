import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;

/**
 * Real Java consumers for the fidelity comparison (bench/fidelity/run.py drives it).
 *
 * Usage: FidelityConsumers BOOTSTRAP TOPIC GROUP PROTOCOL ASSIGNOR STATIC SESSION_MS MS_PER_RECORD [RACK]
 * (RACK: client.rack, for the __consumer_offsets corpus; TOPIC may be a comma-separated list)
 * PROTOCOL is classic or consumer; ASSIGNOR a classic partition.assignment.strategy name
 * (range, cooperative-sticky) or the consumer protocol's group.remote.assignor (uniform).
 * Commands on stdin, one per line: "start NAME", "close NAME", "quit".
 * Prints one JSON object per line on stdout: start, assigned, revoked, lost (callbacks, with the
 * generation or member epoch), batch (records a poll returned and the member processed: partition,
 * first offset, end offset) and closed; "t" is the wall clock in ms (the broker's log uses the same).
 * Processing a batch takes MS_PER_RECORD per record (a sleep); auto-commit (at-least-once) is on.
 */
public final class FidelityConsumers {
    private static final Object OUT = new Object();
    private static final Map<String, Member> MEMBERS = new ConcurrentHashMap<>();

    static void emit(String member, String kind, String rest) {
        synchronized (OUT) {
            System.out.println("{\"t\":" + System.currentTimeMillis() + ",\"m\":\"" + member + "\",\"k\":\"" + kind + "\"" + rest + "}");
            System.out.flush();
        }
    }

    static String partitions(Collection<TopicPartition> tps) {
        return tps.stream().map(tp -> Integer.toString(tp.partition())).sorted().collect(Collectors.joining(",", "[", "]"));
    }

    static final class Member implements Runnable {
        final String name;
        final KafkaConsumer<byte[], byte[]> consumer;
        final String topic;
        final double msPerRecord;
        volatile boolean running = true;
        final Thread thread;

        Member(String name, Properties props, String topic, double msPerRecord) {
            this.name = name;
            this.topic = topic;
            this.msPerRecord = msPerRecord;
            this.consumer = new KafkaConsumer<>(props);
            this.thread = new Thread(this, "member-" + name);
        }

        int generation() {
            try {
                return consumer.groupMetadata().generationId();
            } catch (RuntimeException e) {
                return -1;
            }
        }

        public void run() {
            emit(name, "start", "");
            consumer.subscribe(List.of(topic.split(",")), new ConsumerRebalanceListener() {
                public void onPartitionsRevoked(Collection<TopicPartition> ps) {
                    emit(name, "revoked", ",\"gen\":" + generation() + ",\"ps\":" + partitions(ps));
                }

                public void onPartitionsAssigned(Collection<TopicPartition> ps) {
                    emit(name, "assigned", ",\"gen\":" + generation() + ",\"ps\":" + partitions(ps)
                        + ",\"owned\":" + partitions(consumer.assignment()));
                }

                public void onPartitionsLost(Collection<TopicPartition> ps) {
                    emit(name, "lost", ",\"gen\":" + generation() + ",\"ps\":" + partitions(ps));
                }
            });
            try {
                while (running) {
                    ConsumerRecords<byte[], byte[]> recs = consumer.poll(Duration.ofMillis(100));
                    if (recs.isEmpty()) {
                        continue;
                    }
                    for (TopicPartition tp : recs.partitions()) {
                        List<ConsumerRecord<byte[], byte[]>> list = recs.records(tp);
                        long first = list.get(0).offset();
                        long end = list.get(list.size() - 1).offset() + 1;
                        emit(name, "batch", ",\"p\":" + tp.partition() + ",\"a\":" + first + ",\"b\":" + end + ",\"n\":" + list.size());
                    }
                    long sleepMs = Math.round(recs.count() * msPerRecord);
                    if (sleepMs > 0) {
                        Thread.sleep(sleepMs);
                    }
                }
            } catch (WakeupException | InterruptedException e) {
                // closing
            } finally {
                consumer.close(Duration.ofSeconds(30));
                emit(name, "closed", "");
            }
        }
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2], protocol = args[3], assignor = args[4];
        boolean isStatic = Boolean.parseBoolean(args[5]);
        int sessionMs = Integer.parseInt(args[6]);
        double msPerRecord = Double.parseDouble(args[7]);
        String rack = args.length > 8 ? args[8] : null;
        java.io.BufferedReader in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in));
        String line;
        List<Thread> threads = new ArrayList<>();
        while ((line = in.readLine()) != null) {
            String[] cmd = line.trim().split("\\s+");
            if (cmd[0].equals("quit")) {
                break;
            } else if (cmd[0].equals("start")) {
                Properties p = new Properties();
                p.put("bootstrap.servers", bootstrap);
                p.put("group.id", group);
                p.put("client.id", cmd[1]);
                p.put("group.protocol", protocol);
                if (protocol.equals("classic")) {
                    p.put("partition.assignment.strategy", assignor.equals("range")
                        ? "org.apache.kafka.clients.consumer.RangeAssignor"
                        : "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");
                    p.put("session.timeout.ms", Integer.toString(sessionMs));
                    p.put("heartbeat.interval.ms", "3000");
                } else {
                    p.put("group.remote.assignor", assignor);
                }
                if (isStatic) {
                    p.put("group.instance.id", cmd[1]);
                }
                if (rack != null) {
                    p.put("client.rack", rack);
                }
                p.put("enable.metrics.push", "false"); // KIP-714 telemetry needs jars this harness leaves out
                p.put("enable.auto.commit", "true");
                p.put("auto.commit.interval.ms", "5000");
                p.put("max.poll.records", "500");
                p.put("auto.offset.reset", "earliest");
                p.put("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
                p.put("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
                Member m = new Member(cmd[1], p, topic, msPerRecord);
                MEMBERS.put(cmd[1], m);
                threads.add(m.thread);
                m.thread.start();
            } else if (cmd[0].equals("close")) {
                Member m = MEMBERS.remove(cmd[1]);
                if (m != null) {
                    m.running = false;
                    m.consumer.wakeup();
                }
            }
        }
        for (Member m : MEMBERS.values()) {
            m.running = false;
            m.consumer.wakeup();
        }
        for (Thread t : threads) {
            t.join(60_000);
        }
    }
}
