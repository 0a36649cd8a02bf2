fn main() {
    println!("chi");
}
