// The KoP suite's Java consumer: joins a consumer group with the Java kafka-clients (a Kafka
// 2.8-era client, like the user's), prints the first record it gets and leaves without
// committing. Run from source: java -cp <kafka-clients classpath> FirstRecord.java
// <bootstrap> <group> <topic>. Output: "first <topic> <partition> <offset> <key>"; exit 3
// when no record arrives within a minute.
import java.time.Duration;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.StringDeserializer;

public class FirstRecord {
    public static void main(String[] args) {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("group.id", args[1]);
        props.put("enable.auto.commit", "false");
        // Without a committed offset the consumer would start at the beginning: the caller
        // can tell a resumed group from a reset one.
        props.put("auto.offset.reset", "earliest");
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(args[2]));
            long deadline = System.currentTimeMillis() + 60_000;
            while (System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofSeconds(1))) {
                    System.out.println("first " + r.topic() + " " + r.partition() + " " + r.offset() + " " + r.key());
                    return;
                }
            }
        }
        System.err.println("no record within a minute");
        System.exit(3);
    }
}
